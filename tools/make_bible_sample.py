"""Write the multilingual recipe's bundled default data: Mark 1–8 (book 41) from
``../shared/data/bible`` in seven public-domain translations — eng (World English Bible), spa
(Reina-Valera 1909), fra (Louis Segond 1910), ita (Diodati 1649), rus (Synodal 1876), ara
(Smith & Van Dyke 1865), vie (Vietnamese 1934). The German Elberfelder 1932 is never shipped
(its status is uncertain, see the data README).

- ``encodr/data/bible/mark_documents.tsv``: ``text``, ``doc_id`` (language:chapter); the
  verses of a chapter are a document (the CMLM stream's adjacent sentences);
- ``encodr/data/bible/mark_bitext.tsv``: English verse, the same verse in another language,
  ``eng``, that language (the bitext-retrieval stream).

    python tools/make_bible_sample.py
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIBLE = ROOT.parent / "shared" / "data" / "bible"
OUT = ROOT / "encodr" / "data" / "bible"
LANGS = ("eng", "spa", "fra", "ita", "rus", "ara", "vie")
BOOK = "41"  # Mark
CHAPTERS = 8  # chapters 1–8 of its 16: about 0.8 MB in all


def verses(lang: str) -> dict[tuple[str, str], str]:
    out = {}
    with open(BIBLE / f"{lang}.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4 and parts[0] == BOOK and int(parts[1]) <= CHAPTERS and parts[3].strip():
                out[(parts[1], parts[2])] = " ".join(parts[3].split())
    return out


def main() -> None:
    texts = {lang: verses(lang) for lang in LANGS}
    OUT.mkdir(parents=True, exist_ok=True)
    docs = ["text\tdoc_id"] + [f"{text}\t{lang}:{chapter}" for lang in LANGS for (chapter, _), text in texts[lang].items()]
    bitext = [
        f"{texts['eng'][key]}\t{texts[lang][key]}\teng\t{lang}"
        for lang in LANGS[1:]
        for key in texts["eng"]
        if key in texts[lang]
    ]
    (OUT / "mark_documents.tsv").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (OUT / "mark_bitext.tsv").write_text("\n".join(bitext) + "\n", encoding="utf-8")
    print(f"{len(docs) - 1} verses, {len(bitext)} pairs → {OUT}")


if __name__ == "__main__":
    main()
