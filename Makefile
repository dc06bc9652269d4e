VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: test demo bench clean

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

test: $(PY)
	$(PIP) install --quiet -e '.[test]'
	@# backpack-for-pytorch requires torchvision, whose PyPI build may not import beside torch's CPU build;
	@# torchmetrics and Lightning import torchvision whenever it is installed, so one that cannot be imported goes
	$(PY) -c "import torchvision" 2>/dev/null || $(PIP) uninstall --quiet -y torchvision
	$(PY) -m pytest

demo: $(PY)
	$(PIP) install --quiet -e '.[demo]'
	$(PY) -m hookgrad demo

bench: $(PY)
	$(PIP) install --quiet -e '.[bench]'
	$(PY) -m hookgrad bench
	$(PY) -m hookgrad bench persample

.PHONY: fuzz
N ?= 1000
SEED ?= 0
fuzz: $(PY)
	$(PIP) install --quiet -e '.[test]'
	$(PY) tests/hookfuzz.py --n $(N) --seed $(SEED)

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache runs

.PHONY: api-coverage
api-coverage: $(PY)
	$(PIP) install --quiet -e '.[test]'
	$(PY) scripts/api_coverage.py
