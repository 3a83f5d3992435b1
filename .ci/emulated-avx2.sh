# Sourced by .ci/avx2 and .ci/home-assistant: the emulated AVX2 CPU both run on (.ci/avx2 says why qemu).
# Haswell without the system features user-mode emulation does not implement (each would print a warning).
AVX2_CPU=Haswell-v4,-pcid,-x2apic,-tsc-deadline,-invpcid,-spec-ctrl
# numpy's own AVX2 code (its X86_V3 group) sorts in a way qemu 7.2 gets wrong: `np.sort` of an int64 array that ends
# at the edge of a page followed by an unmapped one crashes under `qemu-x86_64 -cpu $AVX2_CPU` (SIGSEGV, from one
# element up) and runs on the real CPU, so `np.unique` in a test crashed the emulated run now and then. What the
# emulation checks is OpenVINO's kernels and our code on them, not numpy's SIMD: numpy keeps to its baseline there.
# Given to the emulated program only (`env "${EMULATED_ENV[@]}" qemu-x86_64 ...`): the host's processes keep theirs.
EMULATED_ENV=(NPY_DISABLE_CPU_FEATURES=X86_V3)

# qemu-user from Debian's archive, when the machine lacks it.
ensure_qemu() {
    if ! command -v qemu-x86_64 >/dev/null 2>&1; then
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user >/dev/null
    fi
}

# True when this machine's own CPU is what the emulator stands in for: AVX2 and nothing newer (no AVX-512, no
# AVX-VNNI, no AMX), as a Haswell. There the test suite and the server already run natively on AVX2 kernels, so
# .ci/avx2 and .ci/home-assistant run on the real CPU instead of under qemu (on an AVX2-only Zen 3 the emulated
# selection took 38 of CI's minutes, where the same tests natively take a few).
host_is_plain_avx2() {
    local flags
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    [[ $flags == *" avx2 "* && $flags != *" avx512f "* && $flags != *" avx_vnni "* && $flags != *" amx_tile "* ]]
}
