# spirt.bash - bash completion for every spirt tool
#
# The options are read from the tool's own -h at completion time, so they
# cannot drift from the code: an option line of -h is
#   "  -x, --long ARG  text"  or  "      --long ARG  text"
# and an option with an upper-case ARG takes an argument.  Subcommands
# (spirt-store ls, spirt-key keygen, ...) are the first bare word after
# the tool's name in its usage lines.  make install copies this file to
# $(COMPDIR)/<tool> for each tool, where bash-completion finds it; or
# source it from ~/.bashrc.

# _spirt_help TOOL: TOOL's -h, once per shell and tool
_spirt_help()
{
	local v="_spirt_h_${1//[^A-Za-z0-9]/_}"
	if [[ -z ${!v+set} ]]; then
		printf -v "$v" '%s' "$("$1" -h 2>/dev/null)"
	fi
	printf '%s\n' "${!v}"
}

_spirt()
{
	local tool=$1 cur=${COMP_WORDS[COMP_CWORD]} prev=
	local help opts args cmds w i
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	help=$(_spirt_help "$tool")
	[[ -n $help ]] || return 0
	opts=$(sed -n \
	    -e 's/^  *\(-[A-Za-z0-9]\), \(--[a-z][-a-z0-9]*\).*/\1 \2/p' \
	    -e 's/^  *\(--[a-z][-a-z0-9]*\).*/\1/p' <<<"$help")
	# the options followed by an upper-case argument name
	args=$(sed -n \
	    -e 's/^  *\(-[A-Za-z0-9]\), \(--[a-z][-a-z0-9]*\) [A-Z].*/\1 \2/p' \
	    -e 's/^  *\(--[a-z][-a-z0-9]*\) [A-Z].*/\1/p' <<<"$help")
	cmds=$(sed -n -e 's/^usage: //' -e 's/^       //' \
	    -e "/^$tool /{s/\[[^]]*\]//g;s/^$tool  *//;s/ .*//;/^[a-z][a-z]*$/p;}" \
	    <<<"$help" | sort -u)

	COMPREPLY=()
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return 0
	fi
	for w in $args; do
		if [[ $prev == "$w" ]]; then
			COMPREPLY=($(compgen -f -- "$cur"))
			return 0
		fi
	done
	if [[ -n $cmds ]]; then
		# a subcommand, unless one is on the line already
		for ((i = 1; i < COMP_CWORD; i++)); do
			for w in $cmds; do
				[[ ${COMP_WORDS[i]} == "$w" ]] && {
					COMPREPLY=($(compgen -f -- "$cur"))
					return 0
				}
			done
		done
		COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
		return 0
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}

complete -F _spirt spirt-agg spirt-attack spirt-conform spirt-eval \
    spirt-grad spirt-init spirt-invoke spirt-beat spirt-key spirt-peer \
    spirt-shard spirt-run spirt-store spirt-torch spirt-train spirt-update
