# Sourced by the device scripts (repository root, on the GPU machine): install the wheels carried in .whl/ into
# /tmp/site (on PYTHONPATH from then on) and hwprobe itself, editable, without a registry.
#   source tools/device_install.sh; device_install LOG    -> pip's exit status; pip's output in LOG
device_install() {
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  python3 -m pip install -q --no-deps --no-build-isolation -e . > "$1" 2>&1
}
