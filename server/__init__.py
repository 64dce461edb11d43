"""The front doors: settings, FastAPI app, page images, the `folio` CLI."""
