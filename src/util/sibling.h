/* Finding a companion binary (codemode-image): $ENV_NAME, next to our own executable, then the
 * install directory. */
#ifndef CM_UTIL_SIBLING_H
#define CM_UTIL_SIBLING_H

/* malloc'd path; never NULL (the install path is the last resort, exec reports if it is not there). */
char *cm_sibling_binary(const char *name, const char *env_name, const char *install_dir);

#endif
