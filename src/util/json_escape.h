/* JSON strings written as text, without yajl: for the writers that stream their output (the
 * JSON log, the audit log, the learned policy file). */
#ifndef CM_UTIL_JSON_ESCAPE_H
#define CM_UTIL_JSON_ESCAPE_H

#include <stdio.h>

/* The characters of `s`, escaped for a JSON string (no quotes): '"' and '\\', \n and \t by name,
 * every other control character and DEL as \u00XX. */
void json_put_escaped(FILE *f, const char *s);
/* `s` as a quoted JSON string. */
void json_put_string(FILE *f, const char *s);

#endif
