/* codemode-image: images without Docker (src/image/). Its own binary, linked with libcurl,
 * libarchive and libcrypto, so that none of them is on the container start path; `codemode
 * pull|images|rmi` and `codemode-run --image` run it.
 *
 *   codemode-image pull [--store DIR] [--tls-ca FILE] [--authfile FILE] [-q] REF
 *   codemode-image images [--store DIR] [--format table|json] [-q] [--prune]
 *   codemode-image rmi [--store DIR] REF…
 *   codemode-image resolve [--store DIR] [--pull missing|always|never] [--tls-ca FILE] [LIMITS] REF
 *       → {"name":…,"manifest":"sha256:…","rootfs":DIR,"config":FILE} on stdout
 *   LIMITS: --max-layer-size SIZE --max-layer-ratio N --max-image-size SIZE --max-inodes N (the
 *       unpacked rootfs' bounds, image.h struct unpack_limits) */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "image/image.h"
#include "util/cleanup.h"
#include "util/image_resolved.h"

static const char usage[] =
    "usage: codemode-image pull [--store DIR] [--tls-ca FILE] [--authfile FILE] [-q] REF\n"
    "       codemode-image images [--store DIR] [--format table|json] [-q] [--prune]\n"
    "       codemode-image rmi [--store DIR] REF...\n"
    "       codemode-image resolve [--store DIR] [--pull missing|always|never] [--tls-ca FILE]\n"
    "                              [--max-layer-size SIZE] [--max-layer-ratio N] [--max-image-size SIZE]\n"
    "                              [--max-inodes N] REF\n"
    "\n"
    "REF: oci:DIR[:TAG] (an OCI image layout), docker-archive:FILE (docker save),\n"
    "     or [REGISTRY/]NAME[:TAG][@sha256:DIGEST] (a registry, over HTTPS).\n"
    "The store: /var/lib/codemode as root, $XDG_DATA_HOME/codemode (~/.local/share/codemode) else.\n"
    "Unpacking limits (0: none): a layer's files at most --max-layer-size (16G) and --max-layer-ratio\n"
    "(100) times its compressed size + 16M, the image's at most --max-image-size (64G) and\n"
    "--max-inodes (2000000) entries. SIZE: bytes, or with K, M, G, T (powers of 1024).\n";

static int fail(struct cm_error *err) {
  cleanup_free char *msg = cm_error_format(err);
  fprintf(stderr, "codemode: %s\n", msg);
  cm_error_free(err);
  return 1;
}

struct opts {
  const char *store, *ca, *authfile, *format, *pull;
  bool quiet, prune;
  struct unpack_limits limits;
  const char *limit_flag; /* the first limit flag given: only resolve unpacks */
};

/* "16G", "512M", "4096", "2GiB" → bytes (powers of 1024); -1 when it is not one. */
static int64_t parse_size(const char *s, bool units) {
  if (*s < '0' || *s > '9')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return -1;
  int shift = 0;
  if (units && *end) {
    const char *u = strchr("KMGTP", *end & ~0x20);
    if (u == NULL)
      return -1;
    shift = 10 * (int)(u - "KMGTP" + 1);
    end++;
    if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0)
      end += strlen(end);
  }
  if (*end || v > (unsigned long long)(INT64_MAX >> shift))
    return -1;
  return (int64_t)(v << shift);
}

static int set_limit(struct opts *o, int64_t *dst, const char *flag, const char *arg, bool units) {
  if (o->limit_flag == NULL)
    o->limit_flag = flag;
  int64_t v = parse_size(arg, units);
  if (v < 0) {
    fprintf(stderr, "codemode: %s: \"%s\" is not %s (0 for no limit)\n", flag, arg,
            units ? "a size (bytes, or with K, M, G or T: 16G)" : "a whole number");
    return -1;
  }
  *dst = v;
  return 0;
}

static int parse(int argc, char **argv, struct opts *o) {
  enum { O_STORE = 256, O_CA, O_AUTH, O_FORMAT, O_PULL, O_PRUNE, O_MAX_LAYER, O_MAX_RATIO, O_MAX_IMAGE, O_MAX_INODES };
  static const struct option lo[] = {
      {"store", required_argument, NULL, O_STORE}, {"tls-ca", required_argument, NULL, O_CA},
      {"authfile", required_argument, NULL, O_AUTH}, {"format", required_argument, NULL, O_FORMAT},
      {"pull", required_argument, NULL, O_PULL},   {"prune", no_argument, NULL, O_PRUNE},
      {"quiet", no_argument, NULL, 'q'},           {"help", no_argument, NULL, 'h'},
      {"max-layer-size", required_argument, NULL, O_MAX_LAYER},
      {"max-layer-ratio", required_argument, NULL, O_MAX_RATIO},
      {"max-image-size", required_argument, NULL, O_MAX_IMAGE},
      {"max-inodes", required_argument, NULL, O_MAX_INODES},
      {NULL, 0, NULL, 0},
  };
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+qh", lo, NULL)) != -1) {
    switch (c) {
    case O_STORE: o->store = optarg; break;
    case O_CA: o->ca = optarg; break;
    case O_AUTH: o->authfile = optarg; break;
    case O_FORMAT:
      if (strcmp(optarg, "table") != 0 && strcmp(optarg, "json") != 0) {
        fprintf(stderr, "codemode: --format: \"%s\" must be table or json\n", optarg);
        return -1;
      }
      o->format = optarg;
      break;
    case O_PULL:
      if (strcmp(optarg, "missing") != 0 && strcmp(optarg, "always") != 0 && strcmp(optarg, "never") != 0) {
        fprintf(stderr, "codemode: --pull: \"%s\" must be missing, always or never\n", optarg);
        return -1;
      }
      o->pull = optarg;
      break;
    case O_PRUNE: o->prune = true; break;
    case O_MAX_LAYER:
      if (set_limit(o, &o->limits.layer_bytes, "--max-layer-size", optarg, true) < 0)
        return -1;
      break;
    case O_MAX_RATIO:
      if (set_limit(o, &o->limits.layer_ratio, "--max-layer-ratio", optarg, false) < 0)
        return -1;
      break;
    case O_MAX_IMAGE:
      if (set_limit(o, &o->limits.image_bytes, "--max-image-size", optarg, true) < 0)
        return -1;
      break;
    case O_MAX_INODES:
      if (set_limit(o, &o->limits.inodes, "--max-inodes", optarg, false) < 0)
        return -1;
      break;
    case 'q': o->quiet = true; break;
    case 'h': fputs(usage, stdout); exit(0);
    default: fputs(usage, stderr); return -1;
    }
  }
  return optind;
}

static void gen_str(yajl_gen g, const char *k, const char *v) {
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

/* A resolve that pulled an image it then could not unpack (a limit, a hostile layer): the name
 * goes back to what it was and the blobs only this pull brought go, so that nothing of a refused
 * image stays in the store. */
static void forget_pull(struct image_store *st, const char *canonical, const char *before) {
  struct cm_error *e = NULL;
  int r = before ? store_set_ref(st, canonical, before, &e) : store_remove_ref(st, canonical, &e);
  int64_t freed;
  if (r == 0)
    r = store_prune(st, &freed, &e);
  if (r < 0) {
    cleanup_free char *msg = cm_error_format(e);
    fprintf(stderr, "codemode: warning: %s\n", msg);
    cm_error_free(e);
  }
}

static int cmd_pull(struct opts *o, const char *text, bool resolve) {
  struct cm_error *err = NULL;
  struct image_ref ref;
  if (image_ref_parse(text, &ref, &err) < 0)
    return fail(err);
  struct image_store st;
  if (store_open(&st, o->store, &err) < 0) {
    image_ref_clear(&ref);
    return fail(err);
  }
  struct pull_options po = {.quiet = o->quiet, .ca_file = o->ca, .auth_file = o->authfile};
  cleanup_free char *manifest = NULL;
  const char *mode = o->pull ? o->pull : resolve ? "missing" : "always";
  /* A local layout or archive is read again every time (its blobs already in the store are not
   * copied twice): it may have changed since, and reading its index costs nothing. */
  if (ref.source != IMAGE_SRC_REGISTRY && strcmp(mode, "missing") == 0)
    mode = "always";
  /* The memo for codemode-run (util/image_resolved.h): a local source's stamp is taken before
   * we read it, so a change made while we read makes the memo stale, never wrong. */
  struct image_resolved memo = {0};
  bool memo_ok = resolve && image_resolved_cacheable(text);
  if (memo_ok && ref.source != IMAGE_SRC_REGISTRY) {
    char src[4096];
    snprintf(src, sizeof(src), "%s%s", ref.path, ref.source == IMAGE_SRC_OCI_LAYOUT ? "/index.json" : "");
    memo.source = strdup(src);
    memo_ok = memo.source && image_source_stamp_of(src, &memo.stamp) == 0;
  }
  int rc = 0;
  if (strcmp(mode, "always") != 0) {
    manifest = store_get_ref(&st, ref.canonical);
    if (manifest == NULL && strcmp(mode, "never") == 0)
      rc = cm_error_set(&err, 0, "image %s is not in the store %s (codemode pull %s)", text, st.root, text);
  }
  bool pulled = false;
  cleanup_free char *before = NULL;
  if (rc == 0 && manifest == NULL) {
    before = store_get_ref(&st, ref.canonical);
    rc = image_pull(&st, &ref, &po, &manifest, &err);
    pulled = rc == 0;
  }
  cleanup_free char *dir = NULL;
  if (rc == 0 && resolve) {
    rc = store_rootfs(&st, manifest, &o->limits, &dir, &err);
    if (rc < 0 && pulled)
      forget_pull(&st, ref.canonical, before);
  }
  if (rc == 0 && resolve) {
    char rootfs[4096], cfg[4096];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    yajl_gen g = yajl_gen_alloc(NULL);
    yajl_gen_map_open(g);
    gen_str(g, "name", ref.canonical);
    gen_str(g, "manifest", manifest);
    gen_str(g, "rootfs", rootfs);
    gen_str(g, "config", cfg);
    yajl_gen_map_close(g);
    const unsigned char *buf;
    size_t len;
    yajl_gen_get_buf(g, &buf, &len);
    printf("%.*s\n", (int)len, buf);
    yajl_gen_free(g);
    if (memo_ok) {
      memo.ref = strdup(text);
      memo.name = strdup(ref.canonical);
      memo.manifest = strdup(manifest);
      memo.rootfs = strdup(rootfs);
      memo.config = strdup(cfg);
      struct cm_error *merr = NULL;
      /* Only a cache: a store we cannot write it to (a name too long for one file) still runs. */
      if (image_resolved_write(st.root_fd, &memo, &merr) < 0)
        cm_error_free(merr);
    }
  } else if (rc == 0 && !o->quiet) {
    printf("%s %s\n", ref.canonical, manifest);
  } else if (rc == 0) {
    printf("%s\n", manifest);
  }
  image_resolved_clear(&memo);
  store_close(&st);
  image_ref_clear(&ref);
  return rc < 0 ? fail(err) : 0;
}

static int cmd_images(struct opts *o) {
  struct cm_error *err = NULL;
  struct image_store st;
  if (store_open(&st, o->store, &err) < 0)
    return fail(err);
  if (o->prune) {
    int64_t freed;
    if (store_prune(&st, &freed, &err) < 0) {
      store_close(&st);
      return fail(err);
    }
    if (!o->quiet)
      printf("pruned: %lld bytes freed\n", (long long)freed);
    store_close(&st);
    return 0;
  }
  struct store_image_entry *e;
  size_t n;
  if (store_list(&st, &e, &n, &err) < 0) {
    store_close(&st);
    return fail(err);
  }
  bool json = o->format && strcmp(o->format, "json") == 0;
  if (json) {
    yajl_gen g = yajl_gen_alloc(NULL);
    yajl_gen_array_open(g);
    for (size_t i = 0; i < n; i++) {
      yajl_gen_map_open(g);
      gen_str(g, "name", e[i].name);
      gen_str(g, "manifest", e[i].manifest_digest);
      yajl_gen_string(g, (const unsigned char *)"size", 4);
      yajl_gen_integer(g, e[i].size);
      gen_str(g, "created", e[i].created);
      yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    const unsigned char *buf;
    size_t len;
    yajl_gen_get_buf(g, &buf, &len);
    printf("%.*s\n", (int)len, buf);
    yajl_gen_free(g);
  } else if (o->quiet) {
    for (size_t i = 0; i < n; i++)
      printf("%s\n", e[i].name);
  } else {
    printf("%-50s %-19s %10s  %s\n", "NAME", "MANIFEST", "SIZE", "CREATED");
    for (size_t i = 0; i < n; i++)
      printf("%-50s %.19s %10lld  %s\n", e[i].name, e[i].manifest_digest, (long long)e[i].size, e[i].created);
  }
  store_image_entries_free(e, n);
  store_close(&st);
  return 0;
}

static int cmd_rmi(struct opts *o, int argc, char **argv) {
  struct cm_error *err = NULL;
  struct image_store st;
  if (store_open(&st, o->store, &err) < 0)
    return fail(err);
  int rc = 0;
  for (int i = 0; i < argc; i++) {
    struct image_ref ref;
    if (image_ref_parse(argv[i], &ref, &err) < 0) {
      rc = fail(err);
      err = NULL;
      continue;
    }
    if (store_remove_ref(&st, ref.canonical, &err) < 0) {
      rc = fail(err);
      err = NULL;
    } else if (!o->quiet) {
      printf("untagged: %s\n", ref.canonical);
    }
    image_ref_clear(&ref);
  }
  /* What no name refers to any more goes now (a rootfs a run still holds stays). */
  int64_t freed;
  if (store_prune(&st, &freed, &err) < 0)
    rc = fail(err);
  store_close(&st);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  const char *cmd = argv[1];
  struct opts o = {0};
  unpack_limits_default(&o.limits);
  int first = parse(argc - 1, argv + 1, &o);
  if (first < 0)
    return 1;
  int rest = argc - 1 - first;
  char **args = argv + 1 + first;
  if (o.limit_flag && strcmp(cmd, "resolve") != 0) {
    fprintf(stderr, "codemode: %s: %s goes with resolve, which unpacks (codemode-image resolve %s …); %s does not "
                    "unpack\n", cmd, o.limit_flag, o.limit_flag, cmd);
    return 1;
  }
  if (strcmp(cmd, "pull") == 0 || strcmp(cmd, "resolve") == 0) {
    if (rest != 1) {
      fprintf(stderr, "codemode: %s: expects one image reference (see --help)\n", cmd);
      return 1;
    }
    return cmd_pull(&o, args[0], strcmp(cmd, "resolve") == 0);
  }
  if (strcmp(cmd, "images") == 0) {
    if (rest != 0) {
      fprintf(stderr, "codemode: images: unexpected argument \"%s\"\n", args[0]);
      return 1;
    }
    return cmd_images(&o);
  }
  if (strcmp(cmd, "rmi") == 0) {
    if (rest == 0) {
      fprintf(stderr, "codemode: rmi: expects image references\n");
      return 1;
    }
    return cmd_rmi(&o, rest, args);
  }
  fprintf(stderr, "codemode: unknown image command \"%s\"\n%s", cmd, usage);
  return 1;
}
