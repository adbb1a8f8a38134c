#!/usr/bin/env bash
# kube-up.sh DIR [API_PORT]  — start etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1,
#                              install the CRDs beside this folder, and write DIR/kubeconfig. DIR keeps the data.
# kube-up.sh stop DIR        — stop them (controller-manager, apiserver, then etcd).
# Env: ETCD_PORT (23790; the peer port is ETCD_PORT+1), KUBE_BIN_DIR (skip ensure-kube.sh),
#      KCM=0 (no controller-manager). The Python equivalent is src/devcluster/local.py,
#      which uses the same directory layout. No real authorization: loopback only, never exposed.
set -euo pipefail
# The body is one function so bash parses it whole: editing this file mid-run is harmless.
main() {
  HERE=$(cd "$(dirname "$0")" && pwd)
  if [ "${1:-}" = stop ]; then
    stop "$(realpath -m "${2:?usage: kube-up.sh stop DIR}")"
    return
  fi
  DIR=$(realpath -m "${1:?usage: kube-up.sh DIR [API_PORT] | kube-up.sh stop DIR}")
  API=${2:-16443}
  ETCD=${ETCD_PORT:-23790}; PEER=$((ETCD + 1))
  BIN=${KUBE_BIN_DIR:-$(bash "$HERE/ensure-kube.sh")}
  if [ -f "$DIR/pids.json" ] && alive "$DIR"; then
    echo "kube-up: already running for $DIR (kube-up.sh stop $DIR first)" >&2
    exit 1
  fi
  mkdir -p "$DIR/etcd" "$DIR/pki"
  # made beside and moved into place once whole: openssl creates its -out file (empty) before
  # generating, and one that failed or was killed left a file every later start took for the key
  if [ ! -f "$DIR/pki/sa.key" ]; then
    openssl genrsa -out "$DIR/pki/sa.key.making" 2048 2>/dev/null
    mv "$DIR/pki/sa.key.making" "$DIR/pki/sa.key"
  fi
  if [ ! -f "$DIR/pki/tokens.csv" ]; then
    (umask 077; echo "$(openssl rand -hex 16),admin,admin,system:masters" > "$DIR/pki/tokens.csv")
  fi
  chmod 600 "$DIR/pki/tokens.csv"  # one an earlier version left readable by others
  TOKEN=$(cut -d, -f1 "$DIR/pki/tokens.csv")

  etcd --name local --data-dir "$DIR/etcd" --log-level warn \
    --listen-client-urls "http://127.0.0.1:$ETCD" --advertise-client-urls "http://127.0.0.1:$ETCD" \
    --listen-peer-urls "http://127.0.0.1:$PEER" --initial-advertise-peer-urls "http://127.0.0.1:$PEER" \
    --initial-cluster "local=http://127.0.0.1:$PEER" >> "$DIR/etcd.log" 2>&1 < /dev/null &
  ETCD_PID=$!
  echo "{\"etcd\": $ETCD_PID}" > "$DIR/pids.json"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ETCD/health" > /dev/null && break; sleep 0.1; done

  DISABLED=ServiceAccount,StorageObjectInUseProtection
  [ "${KCM:-1}" = 0 ] || DISABLED=ServiceAccount   # pvc-protection runs in the controller-manager
  "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API" \
    --cert-dir "$DIR/pki" --token-auth-file "$DIR/pki/tokens.csv" --authorization-mode AlwaysAllow \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$DIR/pki/sa.key" --service-account-signing-key-file "$DIR/pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --disable-admission-plugins "$DISABLED" \
    --endpoint-reconciler-type none --enable-priority-and-fairness=false \
    >> "$DIR/apiserver.log" 2>&1 < /dev/null &
  API_PID=$!
  echo "{\"etcd\": $ETCD_PID, \"apiserver\": $API_PID}" > "$DIR/pids.json"
  for _ in $(seq 600); do ready && break; sleep 0.1; done
  ready || { tail -n 20 "$DIR/apiserver.log" >&2; stop "$DIR"; exit 1; }

  cat > "$DIR/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$API", certificate-authority: "$DIR/pki/apiserver.crt"}}]
users: [{name: admin, user: {token: "$TOKEN"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
KUBECONFIG
  chmod 600 "$DIR/kubeconfig"

  # our CRDs, by server-side apply (each file is named <plural>.<group>.yaml)
  CRDS=/apis/apiextensions.k8s.io/v1/customresourcedefinitions
  for f in "$HERE/../crds/"*.yaml; do
    api "$CRDS/$(basename "$f" .yaml)?fieldManager=kube-up&force=true" -X PATCH \
      -H 'Content-Type: application/apply-patch+yaml' --data-binary "@$f" > /dev/null
  done
  for f in "$HERE/../crds/"*.yaml; do
    for _ in $(seq 100); do
      api "$CRDS/$(basename "$f" .yaml)" | tr -d ' \n' | grep -q '"type":"Established","status":"True"' && break
      sleep 0.1
    done
  done

  if [ "${KCM:-1}" != 0 ]; then   # started after the CRDs: its garbage collector reads discovery once
    "$BIN/kube-controller-manager" --kubeconfig "$DIR/kubeconfig" --leader-elect=false \
      --controllers=garbagecollector,namespace,pvc-protection \
      --bind-address=127.0.0.1 --secure-port=0 --port=0 >> "$DIR/controller-manager.log" 2>&1 < /dev/null &
    echo "{\"etcd\": $ETCD_PID, \"apiserver\": $API_PID, \"controller-manager\": $!}" > "$DIR/pids.json"
  fi
  echo "kube-up: ready; export KUBECONFIG=$DIR/kubeconfig" >&2
}

api() {  # api PATH [CURL_ARGS...]
  local path=$1; shift
  curl -sSf --cacert "$DIR/pki/apiserver.crt" -H "Authorization: Bearer $TOKEN" "$@" \
    "https://127.0.0.1:$API$path"
}

ready() {
  curl -sf --cacert "$DIR/pki/apiserver.crt" -H "Authorization: Bearer $TOKEN" \
    "https://127.0.0.1:$API/readyz" > /dev/null 2>&1
}

# pids of DIR/pids.json, last started first, whose command line still names DIR
pids() {
  [ -f "$1/pids.json" ] || return 0
  for pid in $(grep -o '[0-9][0-9]*' "$1/pids.json" | tac); do
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$1" && echo "$pid"
  done
  return 0
}

alive() { [ -n "$(pids "$1")" ]; }

stop() {
  for pid in $(pids "$1"); do
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -f "$1/pids.json"
}

main "$@"
exit
