"""Reading what users and the package provide: training text (:mod:`.text`), corpus records
for indexing (:mod:`.records`), sentence pairs (:mod:`.pairs`) and labelled evaluation files
(:mod:`.readers`). The bundled data files live beside these modules (see ``ATTRIBUTION.md``).

This package sits below training and evaluation: it imports neither."""
