"""The folder: scan, sync, watch and the background worker.

Its public names are in `__init__.pyi`; each is imported from its module when first used."""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
