#ifndef CM_LINUX_NET_H
#define CM_LINUX_NET_H
#include "util/error.h"
/* Bring `lo` up in the current (new) network namespace, over rtnetlink (libmnl). */
int net_loopback_up(struct cm_error **err);
#endif
