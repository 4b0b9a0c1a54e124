#!/usr/bin/env bash
# The Python side's tests (trainer, reference server, tiny model, GPU check, client SDK), run
# by `npm test` (swarm/python/pytest.int.test.ts). The client SDK tests start
# `node bin/a3r.js swarm serve` (node from PATH, or A3R_NODE).
#
# Interpreter: A3R_TEST_PYTHON, else the repository's .venv (built by make-venv.sh from the
# local wheelhouse: torch 2.x, transformers, peft) when it imports torch and pytest, else
# Debian's python3 (python3-torch, python3-pytest: `.ci/run` installs both). Where the chosen
# one has no transformers/peft, the HF tests (marker `hf`: random Qwen2 + Qwen's real
# tokenizer) are left out with one line saying so; without torch or pytest everything is
# skipped with one line and this passes, as the TypeScript tests of this stack skip.
#
# Tiers: tests marked `slow` (the HF model ones, the GPU check's learning runs) run only
# with A3R_SLOW_TESTS=1 (`npm run test:slow`, CI's slow tier), which runs everything.
set -u
cd "$(dirname "$0")"
venv_python="../../.venv/bin/python"
# Finding the modules, not importing them: importing transformers alone takes seconds.
has='import importlib.util, sys; sys.exit(0 if all(importlib.util.find_spec(m) for m in sys.argv[1:]) else 1)'
if [ -n "${A3R_TEST_PYTHON:-}" ]; then
  python=$A3R_TEST_PYTHON
elif [ -x "$venv_python" ] && "$venv_python" -c "$has" torch pytest >/dev/null 2>&1; then
  python=$venv_python
else
  python=/usr/bin/python3
fi
if ! "$python" -c "$has" torch pytest >/dev/null 2>&1; then
  echo "swarm/python: skipped ($python cannot import torch and pytest: apt-get install python3-torch python3-pytest)"
  exit 0
fi
markers=()
if [ "${A3R_SLOW_TESTS:-}" != "1" ]; then markers+=("not slow"); fi
if ! "$python" -c "$has" transformers peft >/dev/null 2>&1; then
  echo "swarm/python: HF tests skipped ($python has no transformers/peft: run swarm/python/make-venv.sh)"
  markers+=("not hf")
fi
selection=()
if [ ${#markers[@]} -gt 0 ]; then
  expression=${markers[0]}
  for marker in "${markers[@]:1}"; do expression="$expression and $marker"; done
  selection=(-m "$expression")
fi
# Arguments (test files, --ignore=...) choose a part; none runs all of tests/.
if [ $# -eq 0 ]; then set -- tests; fi
"$python" -m pytest -q -p no:cacheprovider "${selection[@]}" "$@"
