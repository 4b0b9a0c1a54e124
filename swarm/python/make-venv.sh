#!/usr/bin/env bash
# Builds .venv (repo root) for the transformers/PEFT, Ray and TRL tests from a local
# wheelhouse, never from a network. Usage: swarm/python/make-venv.sh [wheel dir ...]
# Without arguments it looks in A3R_WHEELHOUSE (colon-separated) and the folders this
# project's machines carry. Where none holds the wheels it prints one line and exits 0:
# the tests that need the venv then skip, saying why.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.venv"
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  IFS=: read -r -a dirs <<<"${A3R_WHEELHOUSE:-/opt/wheels:/opt/pypi/files:/opt/pypi-more/files}"
fi
links=()
for dir in "${dirs[@]}"; do
  if [ -d "$dir" ]; then links+=(--find-links "$dir"); fi
done
have_wheels=0
for dir in "${dirs[@]}"; do
  if compgen -G "$dir/peft-*.whl" >/dev/null && compgen -G "$dir/torch-*.whl" >/dev/null; then have_wheels=1; fi
done
if [ $have_wheels -eq 0 ]; then
  # the torch wheel may sit in another folder than peft's: check across all
  t=0; p=0
  for dir in "${dirs[@]}"; do
    compgen -G "$dir/torch-*.whl" >/dev/null && t=1
    compgen -G "$dir/peft-*.whl" >/dev/null && p=1
  done
  if [ $t -eq 0 ] || [ $p -eq 0 ]; then
    echo "make-venv: no wheelhouse with torch and peft in ${dirs[*]}: the transformers, Ray and TRL tests will skip"
    exit 0
  fi
fi
python=${A3R_VENV_BASE_PYTHON:-python3}
stamp="$venv/.a3r-requirements"
want=$(cat "$root"/swarm/python/requirements-*.txt | sha256sum | cut -c1-16)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "make-venv: $venv is up to date"
  exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --no-index "${links[@]}" \
  -r "$root/swarm/python/requirements-bench.txt" -r "$root/swarm/python/requirements-ray.txt"
echo "$want" >"$stamp"
"$venv/bin/python" -c "import torch, transformers, peft, ray, trl; print('make-venv: torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'ray', ray.__version__, 'trl', trl.__version__)"
