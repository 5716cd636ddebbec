"""The core API: one request type and one result type per command (:mod:`.requests`,
:mod:`.results`), each field declared once (:mod:`.fields`), and the commands that check and
answer them (:mod:`.commands`). The CLI, the TUI and the HTTP server render these."""
