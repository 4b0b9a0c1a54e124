#!/usr/bin/env bash
# The Python side's tests (trainer, reference server, tiny model, client SDK), run by `npm test`.
# The client SDK tests start `node bin/a3r.js swarm serve` (node from PATH, or A3R_NODE).
# They need Debian's python3-torch and python3-pytest (`.ci/run` installs both); where
# they are missing this says so and passes, as the TypeScript tests of this stack skip.
set -u
cd "$(dirname "$0")"
python=${A3R_TEST_PYTHON:-/usr/bin/python3}
if ! "$python" -c "import torch, pytest" >/dev/null 2>&1; then
  echo "swarm/python: skipped ($python cannot import torch and pytest: apt-get install python3-torch python3-pytest)"
  exit 0
fi
# Arguments (test files, --ignore=...) choose a part; none runs all of tests/.
if [ $# -eq 0 ]; then set -- tests; fi
"$python" -m pytest -q -p no:cacheprovider "$@"
