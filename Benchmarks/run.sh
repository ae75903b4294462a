#!/usr/bin/env bash
# Courier benchmarks: Courier vs FoundationNetworking vs async-http-client, with wrk, h2load and curl as the
# reference limits, against a private nginx on 127.0.0.1. See Benchmarks/README.md.
#
#   Benchmarks/run.sh                  5 interleaved runs of every scenario, writes Benchmarks/RESULTS.md
#   RUNS=7 Benchmarks/run.sh           more runs
#   QUICK=1 Benchmarks/run.sh          smoke test: 1 run, small sizes, writes Benchmarks/results/RESULTS-quick.md
#
# Other settings (environment): SCENARIOS="a b c d e f g h i j k l", CLIENTS="courier foundation ahc go" (also
# courier-telemetry: Courier with an in-memory tracer and metrics backend),
# RESULTS=path/to/RESULTS.md, BENCH_TMP=dir (work directory; default: a new mktemp directory),
# KEEP=1 (keep the work directory), SKIP_BUILD=1 (use the last release build), WRK_SECONDS=10 (how long wrk and
# h2load run).
#
#   BASELINE_BIN=/path/to/courier-bench CLIENTS="courier baseline ahc" Benchmarks/run.sh
#                                      also runs a courier-bench built from another commit (a worktree's
#                                      `swift build -c release --package-path Benchmarks`), interleaved with the rest
#
#   PROFILE=courier:b QUICK=1 Benchmarks/run.sh
#                                      runs that one client and scenario under `perf record` and writes
#                                      Benchmarks/results/perf.courier.b.{data,self.txt,inclusive.txt,callers.txt}
#   PROFILE=courier:f PROFILE_EVENT=offcpu Benchmarks/run.sh
#                                      the same with every context switch (where the threads wait) instead
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    RUNS="${RUNS:-1}"
    RESULTS="${RESULTS:-$here/results/RESULTS-quick.md}"
else
    RUNS="${RUNS:-5}"
    RESULTS="${RESULTS:-$here/RESULTS.md}"
fi
SCENARIOS="${SCENARIOS:-a b c d e f g h i j k l}"
CLIENTS="${CLIENTS:-courier foundation ahc go}"
command_line="RUNS=$RUNS QUICK=$QUICK SCENARIOS='$SCENARIOS' CLIENTS='$CLIENTS'${SKIP_BUILD:+ SKIP_BUILD=$SKIP_BUILD} Benchmarks/run.sh"

log() { printf '[run.sh] %s\n' "$*" >&2; }

# --- Tools: nginx, wrk, h2load, curl, openssl, python3 (Debian packages) ---------------------------------
PATH="$PATH:/usr/sbin:/sbin"
missing=()
command -v nginx >/dev/null || missing+=(nginx-light)
command -v wrk >/dev/null || missing+=(wrk)
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v curl >/dev/null || missing+=(curl)
command -v openssl >/dev/null || missing+=(openssl)
command -v python3 >/dev/null || missing+=(python3)
case " $CLIENTS " in *" go "*) command -v go >/dev/null || missing+=(golang-go) ;; esac
[ -z "${PROFILE:-}" ] || command -v perf >/dev/null || missing+=(linux-perf)
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update >/dev/null
        apt-get install -y "${missing[@]}" >/dev/null || {
            # nginx-light is gone from newer Debian releases; the plain package has what we use.
            apt-get install -y "${missing[@]/nginx-light/nginx}" >/dev/null
        }
    }
fi

# --- Build (release) ---------------------------------------------------------------------------------------
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    log "swift build -c release --package-path Benchmarks"
    swift build -c release --package-path "$here" >&2
    # (l): the background daemon, from the Courier package, beside the clients.
    swift build -c release --package-path "$here" --product courierd >&2
fi
bin="$(swift build -c release --package-path "$here" --show-bin-path)"
# Go's net/http peer: the standard library only, built next to the Swift clients.
case " $CLIENTS " in *" go "*)
    log "go build -o $bin/go-bench (Benchmarks/go)"
    # Go's own per-user cache (under $HOME): a fixed folder in the shared /tmp could be planted by another user.
    (cd "$here/go" && GOFLAGS=-mod=mod go build -o "$bin/go-bench" .) >&2
    ;;
esac

# --- Work directory: files, certificate, nginx -------------------------------------------------------------
work="${BENCH_TMP:-$(mktemp -d "${TMPDIR:-/tmp}/courier-bench.XXXXXX")}"
# nginx's workers run as an unprivileged user: they must be able to read the files (mktemp makes the directory 700).
chmod 755 "$work"
mkdir -p "$work/www" "$work/tmp" "$work/scratch" "$work/logs"
nginx_pid=""
cleanup() {
    if [ -f "$work/nginx.pid" ]; then
        nginx_pid="$(cat "$work/nginx.pid")"
        kill "$nginx_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    # (l)'s courierd, if a run started it.
    if [ -f "$work/xdg-run/courier/courierd.pid" ]; then kill "$(cat "$work/xdg-run/courier/courierd.pid")" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" != 1 ] && [ -z "${BENCH_TMP:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

if [ "$QUICK" = 1 ]; then
    big_path=/64m big_size=$((64 << 20)) upload_size=$((8 << 20)) requests_a=200 requests_b=2000
else
    big_path=/1g big_size=$((1 << 30)) upload_size=$((100 << 20)) requests_a=2000 requests_b=50000
fi
log "work directory $work"
head -c 64 /dev/urandom >"$work/www/64b"
head -c $((1 << 20)) /dev/urandom >"$work/www/1m"
# Large files are allocated, not written: they read back as zeros without any disk I/O.
fallocate -l $((1 << 30)) "$work/www/1g" 2>/dev/null || truncate -s $((1 << 30)) "$work/www/1g"
fallocate -l $((64 << 20)) "$work/www/64m" 2>/dev/null || truncate -s $((64 << 20)) "$work/www/64m"
fallocate -l "$upload_size" "$work/upload.bin" 2>/dev/null || truncate -s "$upload_size" "$work/upload.bin"

# A private CA and a server certificate for 127.0.0.1 signed by it. Clients trust the CA in addition to the
# system store.
(
    cd "$work"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3 \
        -subj "/CN=Courier benchmark CA" -keyout ca.key -out ca.pem \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj "/CN=127.0.0.1" -keyout server.key -out server.csr
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 \
        -extfile server.ext -out server.pem
    cat server.pem ca.pem >server-chain.pem
    openssl x509 -in ca.pem -outform der -out ca.der
) >"$work/logs/openssl.log" 2>&1

# Four free ports: plain HTTP, HTTPS (HTTP/1.1 only), HTTPS with HTTP/2 (g), and the forward proxy (h).
read -r port tls_port h2_port proxy_port < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(4)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))')

# HTTP/2 is switched on by `http2 on;` from nginx 1.25.1; before, by the `http2` parameter of `listen` (one
# address:port speaks it in every server, which is why (g) has a port of its own and (e) stays HTTP/1.1).
nginx_version="$(nginx -v 2>&1 | sed -n 's|.*nginx/\([0-9.]*\).*|\1|p')"
if [ "$(printf '%s\n' 1.25.1 "$nginx_version" | sort -V | head -n1)" = 1.25.1 ]; then
    h2_listen="" h2_directive="http2 on;"
else
    h2_listen=" http2" h2_directive=""
fi

cat >"$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 4096; }
http {
    default_type application/octet-stream;
    log_format bench '\$request_method \$uri \$status \$request_length \$content_length \$body_bytes_sent';
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 300s;
    keepalive_requests 100000000;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        listen 127.0.0.1:$tls_port ssl;
        ssl_certificate $work/server-chain.pem;
        ssl_certificate_key $work/server.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        root $work/www;
        location / { }
        # The upload sink. The proxy module reads the whole request body (request buffering is on) before
        # it passes the request upstream, without the body, to /sink-done, which answers 204; so the answer
        # comes only after the last byte arrived. X-Received-Length is what nginx read (head and body).
        location = /sink {
            client_max_body_size 0;
            client_body_buffer_size 1m;
            proxy_pass http://127.0.0.1:$port/sink-done;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            add_header X-Received-Length \$request_length always;
            access_log $work/logs/sink.log bench;
        }
        location = /sink-done { return 204; }
        # Connections accepted so far, read by bench.py before and after each process: how many it opened.
        location = /nginx-status { stub_status; }
    }
    # (g): the same files over HTTP/2 (ALPN h2, then http/1.1). The keep-alive settings above apply to HTTP/2
    # connections too; nginx allows 128 concurrent streams per connection by default.
    server {
        listen 127.0.0.1:$h2_port ssl$h2_listen;
        $h2_directive
        ssl_certificate $work/server-chain.pem;
        ssl_certificate_key $work/server.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        root $work/www;
        # The protocol nginx served each response over: the clients that cannot tell it per response check this.
        add_header X-Server-Protocol \$server_protocol always;
        location / { }
    }
    # (h): an HTTP forward proxy. Clients send absolute-form requests (GET http://127.0.0.1:$port/64b); nginx
    # takes the path and passes them to the plain-HTTP listener over kept-alive upstream connections. Every
    # response it passes on carries X-Via-Proxy, which the clients check. (nginx has no CONNECT.)
    upstream origin {
        server 127.0.0.1:$port;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$proxy_port;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            add_header X-Via-Proxy 1 always;
        }
    }
}
EOF
nginx -c "$work/nginx.conf" -p "$work" -e "$work/logs/error.log"
for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
curl -sSf -o /dev/null "http://127.0.0.1:$port/64b"
curl -sSf -o /dev/null --cacert "$work/ca.pem" "https://127.0.0.1:$tls_port/64b"
h2_check="$(curl -sSf -o /dev/null -w '%{http_version}' --http2 --cacert "$work/ca.pem" \
    "https://127.0.0.1:$h2_port/64b")"
[ "$h2_check" = 2 ] || { log "nginx on :$h2_port answered over HTTP/$h2_check, not HTTP/2"; exit 1; }
curl -sSf -o /dev/null -D - -x "http://127.0.0.1:$proxy_port" "http://127.0.0.1:$port/64b" |
    grep -i '^X-Via-Proxy: 1' >/dev/null || { log "the proxy on :$proxy_port did not pass the request on"; exit 1; }
# The large file read once through nginx before any run: the first read of a freshly allocated file fills the page
# cache and runs at a third of the speed of the later ones, which would penalise whichever client reads it first.
curl -sSf -o /dev/null "http://127.0.0.1:$port$big_path" || { log "nginx did not serve $big_path"; exit 1; }
# The upload's source likewise, for (f): its first reader would otherwise pay for filling the page cache.
cat "$work/upload.bin" >/dev/null
log "nginx $(cat "$work/nginx.pid") on 127.0.0.1:$port (http), :$tls_port (https), :$h2_port (https, h2)," \
    "and :$proxy_port (http proxy)"

# --- Runs --------------------------------------------------------------------------------------------------
mkdir -p "$(dirname "$RESULTS")" "$here/results"
python3 "$here/Scripts/bench.py" \
    --bin "$bin" --work "$work" --port "$port" --tls-port "$tls_port" --h2-port "$h2_port" --proxy-port "$proxy_port" \
    --runs "$RUNS" --quick "$QUICK" --scenarios "$SCENARIOS" --clients "$CLIENTS" \
    --big-path "$big_path" --big-size "$big_size" --requests-a "$requests_a" --requests-b "$requests_b" \
    --wrk-seconds "${WRK_SECONDS:-$([ "$QUICK" = 1 ] && echo 2 || echo 10)}" \
    --results "$RESULTS" --raw "$here/results/raw-$(date -u +%Y%m%dT%H%M%SZ).jsonl" \
    --command "$command_line" ${BASELINE_BIN:+--baseline-bin "$BASELINE_BIN"} ${PROFILE:+--profile "$PROFILE" --profile-event "${PROFILE_EVENT:-cpu}"} &
driver=$!
trap 'kill "$driver" 2>/dev/null; wait "$driver"; exit 143' TERM INT
wait "$driver"
