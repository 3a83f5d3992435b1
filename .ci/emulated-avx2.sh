# Sourced by .ci/avx2 and .ci/home-assistant: the emulated AVX2 CPU both run on (.ci/avx2 says why qemu).
# Haswell without the system features user-mode emulation does not implement (each would print a warning).
AVX2_CPU=Haswell-v4,-pcid,-x2apic,-tsc-deadline,-invpcid,-spec-ctrl

# qemu-user from Debian's archive, when the machine lacks it.
ensure_qemu() {
    if ! command -v qemu-x86_64 >/dev/null 2>&1; then
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user >/dev/null
    fi
}
