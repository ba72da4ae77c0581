# bench/cpu.sh - sourced by each bench script: bench_header NAME prints the
# line every figure is read against, the CPU it was measured on:
#   NAME: cpu MODEL (family F model M, HYPERVISOR), x86-64-vN, C CPUs,
#         load average L1 L5 L15
# Figures from another CPU are not comparable: quote ratios, or name it.

bench_cpu() {
	lc=$(LC_ALL=C lscpu 2>/dev/null)
	field() {       # field NAME: lscpu's value, else /proc/cpuinfo's
		v=$(printf '%s\n' "$lc" | sed -n "s/^$1: *//p" | sed 1q)
		[ -n "$v" ] || v=$(sed -n "s/^$2[[:space:]]*: //p" \
		    /proc/cpuinfo 2>/dev/null | sed 1q)
		printf '%s' "$v"
	}
	model=$(field 'Model name' 'model name')
	fam=$(field 'CPU family' 'cpu family')
	mod=$(field 'Model' 'model')
	hv=$(field 'Hypervisor vendor' '-no-such-field-')
	[ -n "$hv" ] || ! grep -q '^flags.* hypervisor' /proc/cpuinfo 2>/dev/null ||
	    hv="virtual machine"
	# the x86-64 level glibc's loader finds (glibc >= 2.33), else one
	# from the flags (lzcnt left out: KVM often hides its "abm" flag)
	lvl=$(/lib64/ld-linux-x86-64.so.2 --help 2>/dev/null |
	    sed -n 's/^ *\(x86-64-v[0-9]\) (supported.*/\1/p' | sed 1q)
	if [ -z "$lvl" ] && [ "$(uname -m)" = x86_64 ]; then
		lvl=$(awk '/^flags/ {
			for (i = 3; i <= NF; i++) f[$i] = 1
			l = 1
			if (f["cx16"] && f["popcnt"] && f["sse4_2"] && f["ssse3"])
				l = 2
			if (l == 2 && f["avx2"] && f["bmi2"] && f["fma"] && f["movbe"])
				l = 3
			if (l == 3 && f["avx512f"] && f["avx512bw"] && f["avx512vl"])
				l = 4
			printf "x86-64-v%d (from flags)", l; exit }' /proc/cpuinfo)
	fi
	[ -n "$lvl" ] || lvl=$(uname -m)
	printf 'cpu %s (family %s model %s%s), %s, %s CPUs' "${model:-unknown}" \
	    "${fam:-?}" "${mod:-?}" "${hv:+, $hv}" "$lvl" "$(nproc)"
}

bench_header() {        # bench_header NAME
	printf '%s: %s, load average %s\n' "$1" "$(bench_cpu)" \
	    "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
}
