# Sourced by the checks that emulate a machine without redis-server: `path_without_redis DIR` fills DIR
# with links to every command on this PATH but redis-server and its tools; use DIR as the PATH.
# The first directory on PATH that has a command wins, as for the shell. Names are taken with builtins
# and linked with one `ln` per directory: a process per command took 30 s for PATH's 1,500 commands.
path_without_redis() {
  local target="$1" dir file name
  local -A seen=()
  local -a links
  mkdir -p "$target"
  IFS=: read -ra dirs <<<"$PATH"
  for dir in "${dirs[@]}"; do
    [ -d "$dir" ] || continue
    links=()
    for file in "$dir"/*; do
      name="${file##*/}"
      case "$name" in redis-*) continue ;; esac
      [ -n "${seen[$name]:-}" ] && continue
      [ -x "$file" ] && [ ! -d "$file" ] || continue
      seen[$name]=1
      links+=("$file")
    done
    if [ "${#links[@]}" -gt 0 ]; then ln -s -t "$target" "${links[@]}"; fi
  done
  return 0
}
