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
#                   302 to http://127.0.0.1:18080/<rest> /redirect-to-plain/<rest>
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
#
# TLS, all by the same nginx (TLS 1.2 and 1.3 unless said otherwise), with certificates from a
# test CA made with openssl under /tmp/blobstream-servers/tls (made once, remade when missing or
# about to expire). Clients must trust tls/ca.pem explicitly: it is never put into the system's
# trust store.
#   https://127.0.0.1:18443/  the 18080 server's routes, with tls/server.pem
#                             (SAN IP:127.0.0.1, DNS:localhost, *.s3.localhost); its redirects stay on https:18443
#   https://127.0.0.1:18490/  tus 18090 behind TLS (Location: https://127.0.0.1:18490/files/<id>)
#   https://127.0.0.1:18500/  moto 18100 behind TLS (the client's Host header passed on)
#   Peers a client must refuse, each serving the 18080 routes:
#   https://127.0.0.1:18444/  CA-signed for DNS:wrong.example only (host name mismatch)
#   https://127.0.0.1:18445/  self-signed for 127.0.0.1, not from the CA
#   https://127.0.0.1:18446/  CA-signed for 127.0.0.1, expired
#   https://127.0.0.1:18447/  tls/server.pem, but only TLS 1.0 and 1.1 (ciphers at SECLEVEL=0)
#   https://127.0.0.1:18448/  tls/server.pem, TLS 1.2 only (a server that predates TLS 1.3)
#   /_blobstream/tls-session on every TLS server answers "<protocol> <cipher>" of the connection.
# Request and response bodies pass the TLS proxies unbuffered. curl and openssl come from apt.
set -euo pipefail

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT=/tmp/blobstream-servers
RUN="$ROOT/run"
LOGS="$ROOT/logs"
WWW="$ROOT/www"
TUS_DATA="$ROOT/tus-data"
NGINX_DIR="$ROOT/nginx"
NGINX_CONF="$NGINX_DIR/nginx.conf"
# The locations of the 18080 server, included by the TLS servers too.
NGINX_FILES_CONF="$NGINX_DIR/files.conf"
# Raise when the generated configuration or what the certificates name changes.
NGINX_CONF_REVISION=6
# Older revisions whose servers this configuration still serves unchanged: its health answer
# names them too, so that `up` from an older checkout keeps this nginx instead of restarting it
# without the newer servers.
NGINX_SUPERSEDED_REVISIONS=(2 3 4 5)
NGINX_PORT=18080
TLS="$ROOT/tls"
NGINX_TLS_PORT=18443
TUS_TLS_PORT=18490
MOTO_TLS_PORT=18500
# Peers a client must refuse: wrong host name, self-signed, expired, TLS 1.0/1.1 only.
WRONG_NAME_TLS_PORT=18444
SELF_SIGNED_TLS_PORT=18445
EXPIRED_TLS_PORT=18446
LEGACY_TLS_PORT=18447
TLS12_TLS_PORT=18448
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
# awscli (the benchmark's baseline), crc32c (independent CRC-32C of recorded parts), awscrt
# (the AWS SDKs' own CRC-64/NVME, the checksum tests' reference for crc64nvme).
MOTO_PACKAGES=("moto[server]==5.2.1" botocore awscli crc32c awscrt)
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

# The same over TLS with curl, trusting only the test CA: fails as well when a certificate
# expired or no longer comes from tls/ca.pem.
tls_probe() {
    local port="$1" path="$2" reply expected
    shift 2
    command -v curl >/dev/null || return 1
    reply="$(curl -sS -i --max-time 3 --cacert "$TLS/ca.pem" "https://127.0.0.1:$port$path" 2>/dev/null)" || return 1
    reply="${reply,,}"
    for expected in "$@"; do
        [[ "$reply" == *"$expected"* ]] || return 1
    done
}

healthy() {
    case "$1" in
        # The revision makes `up` restart an nginx started with an older configuration.
        nginx)
            probe "$NGINX_PORT" GET /_blobstream/health " 200 " "blobstream-nginx $NGINX_CONF_REVISION" &&
                tls_probe "$NGINX_TLS_PORT" /_blobstream/health " 200 " "blobstream-nginx $NGINX_CONF_REVISION"
            ;;
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
    apt_install nginx
    NGINX_BIN="$(command -v nginx || echo /usr/sbin/nginx)"
}

# openssl makes the test CA and certificates; curl probes the TLS servers (and the tests and
# the benchmark use it).
ensure_tls_tools() {
    local missing=() tool
    for tool in openssl curl; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    [[ ${#missing[@]} == 0 ]] || apt_install "${missing[@]}"
}

apt_install() {
    if [[ "$(id -u)" != 0 ]]; then
        log "$* missing and only root can install it: apt-get install -y $*"
        return 1
    fi
    log "installing $* from apt"
    # Keep a package's own service (nginx's: port 80, system config) from being started.
    local guard=""
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        guard=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$guard"
        chmod +x "$guard"
    fi
    local status=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@"
    } >&2 || status=$?
    [[ -z "$guard" ]] || rm -f "$guard"
    [[ $status == 0 ]] || { log "apt-get install $* failed ($status)"; return 1; }
    hash -r
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
    local check='import importlib.metadata as m, sys, moto, botocore, awscli, crc32c, awscrt.checksums, flask
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

# The test CA and the servers' certificates under $TLS (RSA 2048, SHA-256):
#   ca.pem, ca.key                  the test CA, 10 years
#   server.pem, server.key          CA-signed, SAN IP:127.0.0.1, DNS:localhost, DNS:s3.localhost and
#                                   DNS:*.s3.localhost (virtual-host buckets; the client resolves
#                                   names under .localhost to the loopback, as RFC 6761 asks), 2 years
#   wrong-name.pem (server.key)     CA-signed, SAN DNS:wrong.example only, 2 years
#   self-signed.pem, .key           self-signed, SAN IP:127.0.0.1 and DNS:localhost, 2 years
#   expired.pem (server.key)        CA-signed like server.pem, expired yesterday
# Kept while they verify for at least 30 more days; otherwise all are made anew.
tls_certificates_current() {
    local name margin=$((30 * 86400))
    for name in ca.key server.key self-signed.key; do
        [[ -s "$TLS/$name" ]] || return 1
    done
    openssl x509 -in "$TLS/ca.pem" -noout -checkend "$margin" >/dev/null 2>&1 || return 1
    for name in server wrong-name; do
        openssl verify -CAfile "$TLS/ca.pem" "$TLS/$name.pem" >/dev/null 2>&1 || return 1
        openssl x509 -in "$TLS/$name.pem" -noout -checkend "$margin" >/dev/null 2>&1 || return 1
    done
    openssl x509 -in "$TLS/server.pem" -noout -ext subjectAltName 2>/dev/null | grep -q 'DNS:\*\.s3\.localhost' || return 1
    openssl x509 -in "$TLS/self-signed.pem" -noout -checkend "$margin" >/dev/null 2>&1 || return 1
    openssl verify -no_check_time -CAfile "$TLS/ca.pem" "$TLS/expired.pem" >/dev/null 2>&1 || return 1
    ! openssl x509 -in "$TLS/expired.pem" -noout -checkend 0 >/dev/null 2>&1
}

# Makes the files listed above tls_certificates_current in directory $1.
make_certificates() {
    local dir="$1"
    local req=(openssl req -config "$dir/openssl.cnf")
    local sign=(openssl x509 -req -sha256 -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -extfile "$dir/openssl.cnf" -days 730)
    "${req[@]}" -x509 -new -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
        -days 3650 -subj "/CN=BlobStream test CA" -extensions ca_ext &&
        "${req[@]}" -new -newkey rsa:2048 -nodes -keyout "$dir/server.key" -out "$dir/server.csr" \
            -subj "/CN=127.0.0.1" &&
        "${req[@]}" -new -key "$dir/server.key" -out "$dir/wrong-name.csr" -subj "/CN=wrong.example" &&
        "${sign[@]}" -in "$dir/server.csr" -out "$dir/server.pem" -extensions server_ext \
            -set_serial "0x$(openssl rand -hex 16)" &&
        "${sign[@]}" -in "$dir/wrong-name.csr" -out "$dir/wrong-name.pem" -extensions wrong_name_ext \
            -set_serial "0x$(openssl rand -hex 16)" &&
        "${req[@]}" -x509 -new -newkey rsa:2048 -nodes -keyout "$dir/self-signed.key" \
            -out "$dir/self-signed.pem" -days 730 -subj "/CN=127.0.0.1" -extensions self_signed_ext &&
        openssl ca -batch -config "$dir/openssl.cnf" -in "$dir/server.csr" -out "$dir/expired.pem" \
            -notext -extensions server_ext -startdate "$(date -u -d '-31 days' +%Y%m%d%H%M%SZ)" \
            -enddate "$(date -u -d '-1 day' +%Y%m%d%H%M%SZ)" &&
        chmod 600 "$dir"/*.key
}

ensure_certificates() {
    tls_certificates_current && return 0
    log "making a test CA and certificates in $TLS"
    local new="$TLS.new" out
    rm -rf "$new"
    mkdir -p "$new/ca-db"
    : >"$new/ca-db/index.txt"
    cat >"$new/openssl.cnf" <<EOF
# Generated by Scripts/test-servers.sh.
[req]
distinguished_name = dn
prompt = no
[dn]
CN = BlobStream test
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1, DNS:localhost, DNS:s3.localhost, DNS:*.s3.localhost
[wrong_name_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:wrong.example
[self_signed_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
subjectAltName = IP:127.0.0.1, DNS:localhost
# For 'openssl ca', the one way OpenSSL 3.0 sets a start date in the past.
[ca]
default_ca = test_ca
[test_ca]
database = $new/ca-db/index.txt
new_certs_dir = $new/ca-db
certificate = $new/ca.pem
private_key = $new/ca.key
default_md = sha256
policy = any_name
unique_subject = no
copy_extensions = none
rand_serial = yes
[any_name]
commonName = supplied
EOF
    if ! out="$(make_certificates "$new" 2>&1 </dev/null)"; then
        log "openssl failed:"
        echo "$out" >&2
        return 1
    fi
    rm -rf "$TLS"
    mv "$new" "$TLS"
    # openssl.cnf names the directory it was made in.
    sed -i "s#$new/#$TLS/#" "$TLS/openssl.cnf"
    tls_certificates_current || { log "the certificates just made in $TLS do not verify"; return 1; }
}

# A TLS server block on port $1 with certificate $2 and key $3; the rest of the arguments are
# its directives.
nginx_tls_server() {
    local port="$1" cert="$2" key="$3" directive
    shift 3
    printf '    server {\n'
    printf '        listen 127.0.0.1:%s ssl;\n' "$port"
    printf '        server_name 127.0.0.1;\n'
    printf '        ssl_certificate %s;\n' "$cert"
    printf '        ssl_certificate_key %s;\n' "$key"
    for directive in "$@"; do
        printf '        %s\n' "$directive"
    done
    printf '    }\n'
}

# The 18080 server's routes: root, body size and locations, for one server block.
nginx_file_routes() {
    echo "root $WWW;"
    echo "client_max_body_size 0;"
    echo "include $NGINX_FILES_CONF;"
}

# The backend on port $2, plain HTTP, behind TLS port $1: bodies both ways unbuffered, the
# client's Host header passed on (S3 signs it; tus builds its Location from it and from
# X-Forwarded-Proto).
nginx_tls_proxy() {
    local port="$1" backend="$2"
    nginx_tls_server "$port" "$TLS/server.pem" "$TLS/server.key" \
        "ssl_protocols TLSv1.2 TLSv1.3;" \
        "client_max_body_size 0;" \
        "location / {" \
        "    proxy_pass http://127.0.0.1:$backend;" \
        "    proxy_http_version 1.1;" \
        "    proxy_set_header Host \$http_host;" \
        "    proxy_set_header X-Forwarded-Proto https;" \
        "    proxy_redirect http://127.0.0.1:$backend/ https://127.0.0.1:$port/;" \
        "    proxy_buffering off;" \
        "    proxy_request_buffering off;" \
        "    proxy_read_timeout 3600s;" \
        "    proxy_send_timeout 3600s;" \
        "}"
}

write_nginx_conf() {
    local user_line="" revision health="blobstream-nginx $NGINX_CONF_REVISION\n"
    # As root, nginx would otherwise run its workers as nobody, who cannot write www/.
    [[ "$(id -u)" != 0 ]] || user_line="user root root;"
    for revision in "${NGINX_SUPERSEDED_REVISIONS[@]}"; do
        health+="blobstream-nginx $revision\n"
    done
    mkdir -p "$NGINX_DIR"/{client_body,proxy,fastcgi,uwsgi,scgi} "$MEMORY_ROOT"/{client_body,upload-memory}
    cat >"$NGINX_FILES_CONF.tmp" <<EOF
# Generated by Scripts/test-servers.sh; edits are lost on the next start.
# The routes of the 18080 server, shared by the TLS servers (paths relative to the server's
# root; redirects keep the scheme and port the request came on).
location = /_blobstream/health {
    default_type text/plain;
    return 200 "$health";
}
# What a TLS connection negotiated (empty on the plain server).
location = /_blobstream/tls-session {
    default_type text/plain;
    return 200 "\$ssl_protocol \$ssl_cipher\n";
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
# To the plain server, whatever the scheme asked: a client on TLS must refuse to follow.
location ~ ^/redirect-to-plain/(.*)\$ {
    return 302 http://127.0.0.1:$NGINX_PORT/\$1;
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
EOF
    local modern="ssl_protocols TLSv1.2 TLSv1.3;"
    local files
    mapfile -t files < <(nginx_file_routes)
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
    ssl_session_cache shared:blobstream-tls:1m;

    server {
        listen 127.0.0.1:$NGINX_PORT;
        server_name 127.0.0.1;
        root $WWW;
        client_max_body_size 0;
        include $NGINX_FILES_CONF;
    }

$(nginx_tls_server "$NGINX_TLS_PORT" "$TLS/server.pem" "$TLS/server.key" "$modern" "${files[@]}")
$(nginx_tls_proxy "$TUS_TLS_PORT" "$TUS_PORT")
$(nginx_tls_proxy "$MOTO_TLS_PORT" "$MOTO_PORT")
$(nginx_tls_server "$TLS12_TLS_PORT" "$TLS/server.pem" "$TLS/server.key" "ssl_protocols TLSv1.2;" "${files[@]}")

    # Peers a client must refuse.
$(nginx_tls_server "$WRONG_NAME_TLS_PORT" "$TLS/wrong-name.pem" "$TLS/server.key" "$modern" "${files[@]}")
$(nginx_tls_server "$SELF_SIGNED_TLS_PORT" "$TLS/self-signed.pem" "$TLS/self-signed.key" "$modern" "${files[@]}")
$(nginx_tls_server "$EXPIRED_TLS_PORT" "$TLS/expired.pem" "$TLS/server.key" "$modern" "${files[@]}")
    # OpenSSL 3 refuses TLS 1.0 and 1.1 below security level 0 (their handshakes sign with SHA-1).
$(nginx_tls_server "$LEGACY_TLS_PORT" "$TLS/server.pem" "$TLS/server.key" \
        "ssl_protocols TLSv1 TLSv1.1;" "ssl_ciphers DEFAULT:@SECLEVEL=0;" "${files[@]}")
}
EOF
    mv "$NGINX_FILES_CONF.tmp" "$NGINX_FILES_CONF"
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
    if [[ " $down " == *" nginx "* ]]; then
        ensure_nginx
        ensure_tls_tools
        ensure_certificates
    fi
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
