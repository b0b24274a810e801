# docker/podman-env.sh: source this to get a working podman on a Debian 12 machine
# without a Docker engine (see ../shared/notes/containers.md):
#   - installs podman, runc and debootstrap when missing (as root);
#   - writes a containers.conf for this sandbox (runc instead of crun, ulimits the
#     VM can grant) under the cache folder and exports CONTAINERS_CONF;
#   - makes sure a local debian:bookworm-slim base image exists, since nothing can
#     be pulled: loaded from a cached `podman save` tarball when there is one, else
#     made with debootstrap from the apt mirror this machine uses and trimmed the
#     way the official slim image is (no docs, man pages or locales; dpkg told to
#     keep leaving them out), then saved to the cache.
# Cache folder: $TUMBLE_CACHE, default ${XDG_CACHE_HOME:-$HOME/.cache}/tumble.

TUMBLE_CACHE=${TUMBLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tumble}
TUMBLE_BASE_LABEL=org.tumble.base=slim-1
mkdir -p "$TUMBLE_CACHE"

tumble_podman_setup() {
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
    if [ "$(id -u)" != 0 ]; then echo "podman-env: need podman runc debootstrap (apt-get install as root)" >&2; return 1; fi
    echo "podman-env: installing podman runc debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc debootstrap >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc debootstrap >/dev/null; }
  fi
  local nofile nproc
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=1048576
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  cat > "$TUMBLE_CACHE/containers.conf" <<EOC
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
EOC
  export CONTAINERS_CONF=$TUMBLE_CACHE/containers.conf
}

# True when debian:bookworm-slim exists locally and is the trimmed one made here.
tumble_base_ok() {
  podman image exists docker.io/library/debian:bookworm-slim &&
  [ "$(podman image inspect --format '{{index .Labels "org.tumble.base"}}' docker.io/library/debian:bookworm-slim 2>/dev/null)" = slim-1 ]
}

tumble_base_image() {
  local tar=$TUMBLE_CACHE/debian-bookworm-slim.tar
  tumble_base_ok && return 0
  if [ -s "$tar" ]; then
    echo "podman-env: loading the cached base image" >&2
    podman load -q -i "$tar" >/dev/null
    podman tag localhost/debian:bookworm-slim docker.io/library/debian:bookworm-slim
    tumble_base_ok && return 0
  fi
  echo "podman-env: making debian:bookworm-slim with debootstrap (once; cached in $TUMBLE_CACHE)" >&2
  local mirror rootfs
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  rootfs=$(mktemp -d "$TUMBLE_CACHE/rootfs.XXXXXX")
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >/dev/null
  # What the official slim image does: leave docs, man pages and locales out, now and for later installs.
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOD'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOD
  cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOD'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOD
  find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright -delete 2>/dev/null || true
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
         "$rootfs"/usr/share/lintian/* "$rootfs"/usr/share/groff/*
  # apt sources as the host has them (the mirror is read here, never written into the project).
  rm -f "$rootfs/etc/apt/sources.list"
  grep -v '^#' /etc/apt/sources.list.d/debian.sources > "$rootfs/etc/apt/sources.list.d/debian.sources"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
         "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/tmp/*
  tar -C "$rootfs" -c . | podman import -q --change 'CMD ["bash"]' --change "LABEL $TUMBLE_BASE_LABEL" - localhost/debian:bookworm-slim >/dev/null
  podman tag localhost/debian:bookworm-slim docker.io/library/debian:bookworm-slim
  rm -rf "$rootfs"
  podman save -q -o "$tar.tmp" localhost/debian:bookworm-slim && mv "$tar.tmp" "$tar"
}
