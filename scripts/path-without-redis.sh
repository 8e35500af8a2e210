# Sourced by the checks that emulate a machine without redis-server: `path_without_redis DIR` fills DIR
# with links to every command on this PATH but redis-server and its tools; use DIR as the PATH.
path_without_redis() {
  local target="$1" dir file name
  mkdir -p "$target"
  IFS=: read -ra dirs <<<"$PATH"
  for dir in "${dirs[@]}"; do
    [ -d "$dir" ] || continue
    for file in "$dir"/*; do
      name="$(basename "$file")"
      case "$name" in redis-*) continue ;; esac
      [ -x "$file" ] && [ ! -e "$target/$name" ] && ln -s "$file" "$target/$name"
    done
  done
  return 0
}
