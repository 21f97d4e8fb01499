#!/usr/bin/env bash
# Real peers for the BlobStream tests, on 127.0.0.1 only, shared by every test run on
# this machine. State, logs and pid files live under /tmp/blobstream-servers.
#
#   Scripts/test-servers.sh up           install what is missing, start what is down, wait
#   Scripts/test-servers.sh down         stop everything
#   Scripts/test-servers.sh status       one line per server; exit 0 only if all answer
#   Scripts/test-servers.sh restart-tus  stop and restart both tus servers, keeping uploads
#
# Servers:
#   nginx         http://127.0.0.1:18080/  root /tmp/blobstream-servers/www
#                   GET (Range, ETag)                /<path>
#                   PUT/DELETE (chunked bodies too)  /upload/<path>  -> www/upload/<path>
#                   307 to /upload/<rest>            /redirect-put/<rest>
#                   PUT/DELETE into tmpfs (benchmark) /upload-memory/<path> -> /dev/shm/blobstream-servers/...
#                   no Range support (200 always)    /norange/<path>   (same files)
#                   no Content-Length (chunked)      /chunked/<path>   (same files)
#                   1 MiB/s per connection           /slow/<path>      (same files)
#                   proxied to the stall server      /stall/...
#   stall         http://127.0.0.1:18081/stall/...  (see Scripts/stall_server.py)
#   tus           http://127.0.0.1:18090/files/     tuspyserver 4.4.3, uploads in tus-data/<id>
#   tus-checksum  http://127.0.0.1:18091/files/     same storage, verifies Upload-Checksum (460)
#   moto          http://127.0.0.1:18100/           moto's S3 server (path-style buckets; any
#                                                   credentials; checksums and signatures unchecked)
set -euo pipefail

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT=/tmp/blobstream-servers
RUN="$ROOT/run"
LOGS="$ROOT/logs"
WWW="$ROOT/www"
TUS_DATA="$ROOT/tus-data"
NGINX_DIR="$ROOT/nginx"
NGINX_CONF="$NGINX_DIR/nginx.conf"
# Raise when the generated configuration changes.
NGINX_CONF_REVISION=2
NGINX_PORT=18080
# tmpfs: the benchmark's PUT target, so page-cache write-back does not time the uploads.
MEMORY_ROOT=/dev/shm/blobstream-servers
STALL_PORT=18081
TUS_PORT=18090
TUS_CHECKSUM_PORT=18091
WAIT_SECONDS=30
PY=python3
PY_PACKAGES=(tuspyserver==4.4.3 uvicorn==0.54.0 fastapi==0.165.0)
MOTO_PORT=18100
# moto's S3 server, and what the S3 tests use beside it: botocore (the SigV4 oracle),
# awscli (the benchmark's baseline), crc32c (independent CRC-32C of recorded parts).
MOTO_PACKAGES=("moto[server]==5.2.1" botocore awscli crc32c)
SERVERS=(stall nginx tus tus-checksum moto)

log() { echo "test-servers: $*" >&2; }

# One HTTP request over bash's /dev/tcp (no curl on a bare machine, and python3 may be a
# slow pyenv shim); succeeds if the lower-cased reply contains every expected string.
probe() {
    local port="$1" method="$2" path="$3" line reply="" expected
    shift 3
    { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
    printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nTus-Resumable: 1.0.0\r\nConnection: close\r\n\r\n' \
        "$method" "$path" "$port" >&3 2>/dev/null || { exec 3<&-; return 1; }
    while IFS= read -r -t 3 -u 3 line || [[ -n "$line" ]]; do
        reply+="${line,,}"$'\n'
        line=""
    done
    exec 3<&-
    for expected in "$@"; do
        [[ "$reply" == *"$expected"* ]] || return 1
    done
}

healthy() {
    case "$1" in
        # The revision makes `up` restart an nginx started with an older configuration.
        nginx) probe "$NGINX_PORT" GET /_blobstream/health " 200 " "blobstream-nginx $NGINX_CONF_REVISION" ;;
        stall) probe "$STALL_PORT" GET /stall/health " 200 " "stall-ok" ;;
        tus)
            probe "$TUS_PORT" OPTIONS /files/ " 204 " "tus-version: 1.0.0" &&
                ! probe "$TUS_PORT" OPTIONS /files/ "checksum"
            ;;
        tus-checksum)
            probe "$TUS_CHECKSUM_PORT" OPTIONS /files/ " 204 " "tus-version: 1.0.0" \
                "tus-checksum-algorithm: sha1,sha256,md5"
            ;;
        moto) probe "$MOTO_PORT" GET / " 200 " "listallmybucketsresult" ;;
    esac
}

# Prints the names of the given servers that do not answer as ours; fails if any.
unhealthy() {
    local name bad=()
    for name in "$@"; do
        healthy "$name" || bad+=("$name")
    done
    echo "${bad[*]}"
    [[ ${#bad[@]} == 0 ]]
}

pid_file() { echo "$RUN/$1.pid"; }

# What a server's command line must contain, so a recycled pid is never mistaken for ours.
cmdline_marker() {
    case "$1" in
        nginx) echo "$NGINX_CONF" ;;
        stall) echo "stall_server.py" ;;
        tus) echo "--port$TUS_PORT" ;;
        tus-checksum) echo "--port$TUS_CHECKSUM_PORT" ;;
        moto) echo "moto_server" ;;
    esac
}

# Prints the pid of our running server, or fails.
running_pid() {
    local file pid
    file="$(pid_file "$1")"
    [[ -s "$file" ]] || return 1
    pid="$(tr -dc 0-9 <"$file")"
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    tr -d '\0' <"/proc/$pid/cmdline" | grep -qF -- "$(cmdline_marker "$1")" || return 1
    echo "$pid"
}

# kill -0 is not enough: a killed daemon stays a zombie until init reaps it, which in
# some containers takes seconds.
alive() {
    local stat
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [[ -n "$stat" && "${stat%% *}" != Z ]]
}

stop_server() {
    local pid i
    if pid="$(running_pid "$1")"; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            alive "$pid" || break
            sleep 0.1
        done
        if alive "$pid"; then
            log "$1 (pid $pid) ignored SIGTERM for 5 s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
        fi
    fi
    rm -f "$(pid_file "$1")"
}

log_file() { echo "$LOGS/$1.log"; }

ensure_nginx() {
    NGINX_BIN="$(command -v nginx || true)"
    [[ -n "$NGINX_BIN" || ! -x /usr/sbin/nginx ]] || NGINX_BIN=/usr/sbin/nginx
    [[ -z "$NGINX_BIN" ]] || return 0
    if [[ "$(id -u)" != 0 ]]; then
        log "nginx is missing and only root can install it: apt-get install -y nginx"
        return 1
    fi
    log "installing nginx from apt"
    # Keep the package's own service (port 80, system config) from being started.
    local guard=""
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        guard=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$guard"
        chmod +x "$guard"
    fi
    local status=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq nginx
    } >&2 || status=$?
    [[ -z "$guard" ]] || rm -f "$guard"
    [[ $status == 0 ]] || { log "apt-get install nginx failed ($status)"; return 1; }
    NGINX_BIN="$(command -v nginx || echo /usr/sbin/nginx)"
}

ensure_python_packages() {
    local check='import importlib.metadata as m, sys, uvicorn, fastapi, tuspyserver
sys.exit(m.version("tuspyserver") != "4.4.3")'
    "$PY" -c "$check" 2>/dev/null && return 0
    log "installing ${PY_PACKAGES[*]} from PyPI for $(command -v "$PY")"
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq python3-pip >&2
    fi
    local pip=("$PY" -m pip install --quiet --disable-pip-version-check)
    if ! "${pip[@]}" "${PY_PACKAGES[@]}" >&2; then
        # Debian's own python3 refuses system-wide installs unless told (PEP 668).
        "${pip[@]}" --break-system-packages "${PY_PACKAGES[@]}" >&2
    fi
    "$PY" -c "$check"
}

ensure_moto_packages() {
    local check='import importlib.metadata as m, sys, moto, botocore, awscli, crc32c, flask
sys.exit(m.version("moto") != "5.2.1")'
    "$PY" -c "$check" 2>/dev/null && command -v moto_server >/dev/null && return 0
    log "installing ${MOTO_PACKAGES[*]} from PyPI for $(command -v "$PY")"
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq python3-pip >&2
    fi
    local pip=("$PY" -m pip install --quiet --disable-pip-version-check)
    if ! "${pip[@]}" "${MOTO_PACKAGES[@]}" >&2; then
        "${pip[@]}" --break-system-packages "${MOTO_PACKAGES[@]}" >&2
    fi
    hash -r
    "$PY" -c "$check"
}

write_nginx_conf() {
    local user_line=""
    # As root, nginx would otherwise run its workers as nobody, who cannot write www/.
    [[ "$(id -u)" != 0 ]] || user_line="user root root;"
    mkdir -p "$NGINX_DIR"/{client_body,proxy,fastcgi,uwsgi,scgi} "$MEMORY_ROOT"/{client_body,upload-memory}
    cat >"$NGINX_CONF.tmp" <<EOF
# Generated by Scripts/test-servers.sh; edits are lost on the next start.
$user_line
worker_processes 2;
pid $(pid_file nginx);
lock_file $RUN/nginx.lock;
error_log $(log_file nginx) warn;

events { worker_connections 1024; }

http {
    types {}
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 100000;
    client_body_temp_path $NGINX_DIR/client_body;
    proxy_temp_path $NGINX_DIR/proxy;
    fastcgi_temp_path $NGINX_DIR/fastcgi;
    uwsgi_temp_path $NGINX_DIR/uwsgi;
    scgi_temp_path $NGINX_DIR/scgi;

    server {
        listen 127.0.0.1:$NGINX_PORT;
        server_name 127.0.0.1;
        root $WWW;
        client_max_body_size 0;

        location = /_blobstream/health {
            default_type text/plain;
            return 200 "blobstream-nginx $NGINX_CONF_REVISION\n";
        }
        location /upload/ {
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:rw all:r;
        }
        # For blob-bench: PUTs into memory, so disk write-back does not decide the timing, and
        # through a 1 MiB body buffer: with the default 16 KiB, nginx spent a core per GB/s on
        # small reads and writes and every client, curl included, ended at its ceiling.
        location /upload-memory/ {
            root $MEMORY_ROOT;
            client_body_temp_path $MEMORY_ROOT/client_body;
            client_body_buffer_size 1m;
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:rw all:r;
        }
        location ~ ^/redirect-put/(.*)\$ {
            return 307 /upload/\$1;
        }
        location /norange/ {
            alias $WWW/;
            max_ranges 0;
        }
        location /chunked/ {
            alias $WWW/;
            # A substitution that never matches still makes nginx drop Content-Length
            # and stream the file with chunked transfer coding.
            sub_filter_types *;
            sub_filter "blobstream-this-string-is-never-in-a-test-file-7f3a9c" "";
        }
        location /slow/ {
            alias $WWW/;
            limit_rate 1m;
        }
        location /stall/ {
            proxy_pass http://127.0.0.1:$STALL_PORT;
            proxy_http_version 1.1;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
        }
    }
}
EOF
    mv "$NGINX_CONF.tmp" "$NGINX_CONF"
}

# Replaces this (sub)shell by the command with only stdin, stdout and stderr open: a daemon
# that kept an inherited descriptor (our lock, a CI runner's output pipe) would hold it forever.
exec_without_inherited_fds() {
    local fd
    for fd in /proc/"$BASHPID"/fd/*; do
        fd="${fd##*/}"
        if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec "$@"
}

# Starts one server in the background; LAUNCHED is the pid to watch while it comes up.
start_server() {
    local name="$1" log
    log="$(log_file "$name")"
    : >"$log"
    LAUNCHED=""
    case "$name" in
        nginx)
            write_nginx_conf
            # nginx forks its daemon itself and fails here if it cannot (port taken, bad conf).
            (exec_without_inherited_fds "$NGINX_BIN" -c "$NGINX_CONF" -p "$NGINX_DIR") \
                </dev/null >>"$log" 2>&1 || return 1
            ;;
        stall)
            (exec_without_inherited_fds setsid "$PY" "$SCRIPTS/stall_server.py" --port "$STALL_PORT" \
                --pid-file "$(pid_file stall)") </dev/null >>"$log" 2>&1 &
            LAUNCHED=$!
            ;;
        tus | tus-checksum)
            local port="$TUS_PORT" extra=()
            [[ "$name" == tus ]] || { port="$TUS_CHECKSUM_PORT"; extra+=(--checksum); }
            # Only one process may repair the shared storage, and only while no
            # server is writing to it.
            if [[ "$name" == tus ]] && ! running_pid tus-checksum >/dev/null; then
                extra+=(--repair)
            fi
            (exec_without_inherited_fds setsid "$PY" "$SCRIPTS/tus_server.py" --port "$port" \
                --pid-file "$(pid_file "$name")" --data-dir "$TUS_DATA" "${extra[@]}") \
                </dev/null >>"$log" 2>&1 &
            LAUNCHED=$!
            ;;
        moto)
            # moto_server cannot write a pid file: the background job's pid is its own (exec).
            (exec_without_inherited_fds setsid moto_server -H 127.0.0.1 -p "$MOTO_PORT") \
                </dev/null >>"$log" 2>&1 &
            LAUNCHED=$!
            echo "$LAUNCHED" >"$(pid_file moto)"
            ;;
    esac
}

start_failed() {
    log "$1 $2; last lines of $(log_file "$1"):"
    tail -n 30 "$(log_file "$1")" >&2 || true
    return 1
}

# Starts one server and waits until it answers.
launch() {
    local name="$1" deadline=$((SECONDS + WAIT_SECONDS))
    log "starting $name"
    start_server "$name" || { start_failed "$name" "failed to start"; return 1; }
    while ((SECONDS < deadline)); do
        healthy "$name" && return 0
        if [[ -n "$LAUNCHED" ]] && ! alive "$LAUNCHED"; then
            start_failed "$name" "exited while starting"
            return 1
        fi
        sleep 0.2
    done
    start_failed "$name" "did not answer within ${WAIT_SECONDS}s"
}

lock() {
    mkdir -p "$ROOT"
    exec 9>"$ROOT/.lock"
    flock -w 600 9 || { log "another test-servers.sh held $ROOT/.lock for 10 minutes"; exit 1; }
}

cmd_up() {
    unhealthy "${SERVERS[@]}" >/dev/null 2>&1 && return 0
    lock
    local down
    down="$(unhealthy "${SERVERS[@]}")" && return 0
    mkdir -p "$RUN" "$LOGS" "$WWW/upload" "$TUS_DATA"
    [[ " $down " != *" nginx "* ]] || ensure_nginx
    [[ " $down " != *" tus"* ]] || ensure_python_packages
    [[ " $down " != *" moto "* ]] || ensure_moto_packages
    local name
    for name in "${SERVERS[@]}"; do
        [[ " $down " == *" $name "* ]] || continue
        stop_server "$name"
        launch "$name"
    done
}

cmd_down() {
    lock
    local name
    for name in moto tus-checksum tus nginx stall; do
        stop_server "$name"
    done
}

cmd_status() {
    local down name
    down="$(unhealthy "${SERVERS[@]}" || true)"
    for name in "${SERVERS[@]}"; do
        if [[ " $down " == *" $name "* ]]; then
            echo "$name: down"
        else
            echo "$name: up (pid $(running_pid "$name" || echo '?'))"
        fi
    done
    [[ -z "$down" ]]
}

cmd_restart_tus() {
    lock
    mkdir -p "$RUN" "$LOGS" "$TUS_DATA"
    ensure_python_packages
    stop_server tus-checksum
    stop_server tus
    local name
    for name in tus tus-checksum; do
        launch "$name"
    done
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    restart-tus) cmd_restart_tus ;;
    *)
        echo "usage: $0 up|down|status|restart-tus" >&2
        exit 2
        ;;
esac
