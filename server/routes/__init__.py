"""The API's routes, one module per resource (answers, documents, pages, exports, the reading
desk's extraction, health, the web page); `server.app.create_app` includes their routers."""
