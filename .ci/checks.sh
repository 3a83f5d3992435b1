# Sourced by .ci/container and .ci/haproxy: counted checks and their closing line. The caller sets `suite` (the
# closing line's name) and `work` (its temporary folder) first.
passed=0 failed=0
started=$SECONDS

# check NAME COMMAND...: one line per check; a failure shows the end of what the command printed (less podman's
# complaint that no systemd runs here) and returns 1.
check() {
    local name=$1
    shift
    if "$@" >"$work/check.log" 2>&1; then
        passed=$((passed + 1))
        echo "ok    $name"
    else
        failed=$((failed + 1))
        echo "FAIL  $name"
        grep -v 'systemd connection' "$work/check.log" | tail -n 15 | sed 's/^/      /'
        return 1
    fi
}

# within SECONDS COMMAND...: COMMAND succeeds within that many seconds (tried once a second).
within() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 1
    done
}

# finish: the closing line `SUITE: N passed, N failed`, then exit 1 if any check failed (the caller's EXIT trap
# cleans up).
finish() {
    echo "$suite: $passed passed, $failed failed ($((SECONDS - started)) s)"
    [ "$failed" -eq 0 ]
    exit
}
