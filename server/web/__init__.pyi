from .web import router as router
