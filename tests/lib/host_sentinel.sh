#!/bin/bash
# tests/lib/host_sentinel.sh record|check FILE [EXTRA-PATH…] — the host is never touched.
#
#   record   write to FILE one line per watched host file: type, owner, mode, device number or
#            symlink target, ctime and (regular files) the sha256 of the content
#   check    compare the host with FILE; print one line per file that changed, appeared or
#            disappeared ("host touched: PATH: what"); exit 1 if any did
#
# Watched (tests/run-all.sh records before the suites and checks after them):
#   /dev      every node, link and directory of the host's devtmpfs (not the pts, shm, mqueue or
#             hugepages mounts inside it, which are for processes to use)
#   /etc      everything
#   binaries  the runtimes (CODEMODE and its siblings, runc, crun, the Docker and containerd
#             binaries), busybox, plus EXTRA-PATHs
#   fixtures  tests/*/fixtures and the fuzz corpus of this tree
#
# What may change without failing the run, and why (nothing else may):
#   - /dev/loopN appearing: the kernel makes the node when losetup -f finds every loop device
#     busy (the Docker and security suites attach images from their own temp dirs); for the same
#     reason the ctime of directories in /dev is not compared (their entries are).
#   - atime and mtime, which are not recorded: reading a file, or writing to a device node (which
#     sets its mtime), changes nothing. ctime covers every change of owner, mode, links or content.
#   - /etc when the package manager ran during the run (a suite's deps.sh installing what it
#     needs, under CI=true): the files dpkg lists for the packages it worked on meanwhile
#     (/var/log/dpkg.log), its temporary *.dpkg-new and friends, the files maintainer scripts and
#     triggers rewrite (ld.so.cache, alternatives, systemd unit links, init scripts, PAM's common-*
#     files, the CA bundle), new files in a directory of such a package (not /etc itself), and new
#     lines in passwd, group, shadow, gshadow, subuid and subgid,
#     where every line that was there must still be there. Owner, mode and content of every
#     other file stay strict.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

mode=${1:-} file=${2:-}
if [ -z "$mode" ] || [ -z "$file" ]; then
  echo "usage: ${0##*/} record|check FILE [EXTRA-PATH...]" >&2
  exit 2
fi
shift 2

watched_binaries() {
  local c dir n
  c=${CODEMODE:-$repo/build/codemode}
  dir=$(dirname "$c")
  for n in "$c" "$dir/codemode-run" "$dir/codemode-exec-trampoline" "$dir/codemode-dynamic" "$dir/codemode-broker" \
    "$dir/codemode-broker-tls.so"; do
    [ -e "$n" ] && echo "$n"
  done
  for n in runc crun docker dockerd containerd containerd-shim-runc-v2 ctr busybox; do
    c=$(command -v "$n" 2>/dev/null) && [ -e "$c" ] && readlink -f "$c"
  done
  for n in /usr/local/bin/codemode /usr/local/bin/codemode-run /bin/busybox "$@"; do
    [ -e "$n" ] && echo "$n"
  done
}

# The watched paths, NUL-separated.
watched_paths() {
  find /dev /etc -xdev -print0 2>/dev/null
  watched_binaries "$@" | tr '\n' '\0'
  # Not the suites' own caches (tests/*/.work: npm packages a suite installs on first use, whose
  # test fixtures would otherwise count as the tree's).
  find "$repo/tests" -path "$repo/tests/*/.work" -prune -o \( -path '*/fixtures/*' -o -path "$repo/tests/fuzz/corpus/*" \) -print0 2>/dev/null
}

# One line per path, sorted: PATH<TAB>TYPE OWNER MODE DEVICE CTIME [HASH | ->TARGET]. A few
# batched commands, not one per file: the whole host takes well under a second.
snapshot() {
  local list
  list=$(mktemp)
  watched_paths "$@" >"$list"
  {
    xargs -0 stat --printf 'S\t%n\t%F %u:%g %a %t:%T %z\n' <"$list" 2>/dev/null
    tr '\0' '\n' <"$list" | while IFS= read -r p; do [ -L "$p" ] && printf 'L\t%s\t%s\n' "$p" "$(readlink "$p")"; done
    tr '\0' '\n' <"$list" | while IFS= read -r p; do [ -f "$p" ] && [ ! -L "$p" ] && printf '%s\0' "$p"; done |
      xargs -0 sha256sum 2>/dev/null | awk '{ h = $1; sub(/^[^ ]+  /, ""); print "H\t" $0 "\t" h }'
  } | awk -F'\t' '
    $1 == "S" { st[$2] = $3; order[++n] = $2 }
    $1 == "L" { lt[$2] = $3 }
    $1 == "H" { h[$2] = $3 }
    END {
      for (i = 1; i <= n; i++) {
        p = order[i]; v = st[p]
        sub(/ special file/, "", v); sub(/^regular empty file/, "regular file", v)
        # /dev directories without their ctime: the kernel adds loop nodes (see above); every
        # entry is compared on its own.
        if ((p == "/dev" || index(p, "/dev/") == 1) && v ~ /^directory /) sub(/ [0-9-]+ [0-9:.]+ [+-][0-9]+$/, "", v)
        if (p in lt) v = v " ->" lt[p]
        if (p in h) v = v " " h[p]
        print p "\t" v
      }
    }' | LC_ALL=C sort -t$'\t' -k1,1 -u
  rm -f "$list"
}

account_files="/etc/passwd /etc/group /etc/shadow /etc/gshadow /etc/subuid /etc/subgid"
line_hashes() { # line_hashes FILE: the sha256 of each line, sorted
  [ -r "$1" ] || return 0
  while IFS= read -r l || [ -n "$l" ]; do printf '%s' "$l" | sha256sum | cut -c1-64; done <"$1" | LC_ALL=C sort
}

case $mode in
  record)
    snapshot "$@" >"$file.tmp" && mv "$file.tmp" "$file"
    # When the package manager was last busy: for check's allowances.
    stat -c %Y /var/log/dpkg.log >"$file.dpkg" 2>/dev/null || echo 0 >"$file.dpkg"
    date +%s >"$file.start"
    # The lines of the account files, hashed one by one (never copied: shadow holds hashes).
    for f in $account_files; do
      line_hashes "$f" >"$file.lines.${f##*/}"
    done
    exit 0
    ;;
  check) ;;
  *)
    echo "${0##*/}: unknown mode $mode" >&2
    exit 2
    ;;
esac

[ -e "$file" ] || {
  echo "host touched: no record $file to compare with" >&2
  exit 1
}
now=$(mktemp)
trap 'rm -f "$now" "$now.pkgfiles"' EXIT
snapshot "$@" >"$now"

# Packages dpkg installed, upgraded or configured since the record, and their files.
dpkg_ran=false
: >"$now.pkgfiles"
if [ "$(stat -c %Y /var/log/dpkg.log 2>/dev/null || echo 0)" != "$(cat "$file.dpkg")" ]; then
  dpkg_ran=true
  start=$(date -d "@$(cat "$file.start")" '+%Y-%m-%d %H:%M:%S')
  awk -v s="$start" '($1 " " $2) >= s && $3 == "status" { print $5 }' /var/log/dpkg.log |
    sort -u | while read -r pkg; do dpkg-query -L "$pkg" 2>/dev/null; done >"$now.pkgfiles"
fi

# May PATH's change be the package manager's? (only asked when dpkg ran)
package_change() {
  local p=$1
  $dpkg_ran || return 1
  grep -qxF -- "$p" "$now.pkgfiles" && return 0
  case $p in
    /etc/ld.so.cache | /etc/alternatives | /etc/alternatives/* | /etc/systemd/system | /etc/systemd/system/* | \
      /etc/init.d | /etc/init.d/* | /etc/rc[0-6S].d | /etc/rc[0-6S].d/* | /etc/ssl/certs | /etc/ssl/certs/* | \
      /etc/ca-certificates.conf | /etc/default | /etc/default/* | /etc/group- | /etc/gshadow- | /etc/passwd- | \
      /etc/shadow- | /etc/subuid- | /etc/subgid- | /etc/.pwd.lock | /etc/apt/* | /etc/logrotate.d | /etc/logrotate.d/* | \
      /etc/modules-load.d | /etc/modules-load.d/* | /etc/sysctl.d | /etc/sysctl.d/* | /etc/pam.d/common-* | \
      /etc/pam.d | /etc | *.dpkg-new | *.dpkg-tmp | *.dpkg-old | *.dpkg-dist | *.dpkg-bak | /etc/passwd | /etc/group | \
      /etc/shadow | /etc/gshadow | /etc/subuid | /etc/subgid)
      return 0
      ;;
  esac
  return 1
}

# A file a maintainer script made in a package's own directory under /etc (only asked when dpkg ran).
package_new_file() {
  local parent=${1%/*}
  $dpkg_ran && [ "$parent" != /etc ] && grep -qxF -- "$parent" "$now.pkgfiles"
}

# what_changed OLD NEW: the fields of two descriptions that differ, in words.
what_changed() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    na = split(a, x, " "); nb = split(b, y, " ")
    # "regular file" and friends are two words; "character", "directory", "symbolic link"...
    ta = x[1]; i = 2; if (x[1] == "regular" || x[1] == "symbolic") { ta = ta " " x[2]; i = 3 }
    tb = y[1]; j = 2; if (y[1] == "regular" || y[1] == "symbolic") { tb = tb " " y[2]; j = 3 }
    out = ""
    if (ta != tb) out = out ", type " ta " -> " tb
    if (x[i] != y[j]) out = out ", owner " x[i] " -> " y[j]
    if (x[i + 1] != y[j + 1]) out = out ", mode " x[i + 1] " -> " y[j + 1]
    if (x[i + 2] != y[j + 2]) out = out ", device " x[i + 2] " -> " y[j + 2]
    ca = x[i + 3] " " x[i + 4]; cb = y[j + 3] " " y[j + 4]
    ra = ""; for (k = i + 6; k <= na; k++) ra = ra " " x[k]
    rb = ""; for (k = j + 6; k <= nb; k++) rb = rb " " y[k]
    if (ra != rb) out = out (ra ~ /^ ->/ ? ", link target" ra " ->" rb : ", content changed")
    if (ca != cb) out = out ", ctime " ca " -> " cb
    print substr(out, 3)
  }'
}

failures=0
report() {
  echo "host touched: $1"
  failures=$((failures + 1))
}

while IFS=$'\t' read -r tag path rest; do
  case $tag in
    '<')
      case $path in /dev/loop[0-9]*) continue ;; esac
      package_change "$path" && continue
      report "$path: removed (was: $rest)"
      ;;
    '>')
      case $path in /dev/loop[0-9]*) continue ;; esac
      package_change "$path" && continue
      package_new_file "$path" && continue
      report "$path: appeared ($rest)"
      ;;
    '~')
      old=${rest%%|*} new=${rest#*|}
      # ctime alone, for a directory whose entries stayed the same: a file made and removed
      # again inside it. Still a change of the host.
      if package_change "$path"; then
        # Accounts: new users and groups may come, every line that was there must stay.
        case " $account_files " in
          *" $path "*)
            if [ -n "$(LC_ALL=C comm -23 "$file.lines.${path##*/}" <(line_hashes "$path"))" ]; then
              report "$path: lines that were there are gone or changed"
            fi
            ;;
        esac
        continue
      fi
      report "$path: $(what_changed "$old" "$new")"
      ;;
  esac
done < <(LC_ALL=C join -t$'\t' -a1 -a2 -e MISSING -o 0,1.2,2.2 "$file" "$now" |
  awk -F'\t' '$2 == "MISSING" { print ">\t" $1 "\t" $3; next }
              $3 == "MISSING" { print "<\t" $1 "\t" $2; next }
              $2 != $3 { print "~\t" $1 "\t" $2 "|" $3 }')
[ "$failures" -eq 0 ]
