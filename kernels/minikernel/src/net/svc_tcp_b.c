/* net/svc_tcp_b.c - TCP services on ports 1064..1127 */
#include "net.h"
#include "svc_gen.h"
#include "rep.h"

#define SVC_TCP_B(n) SVC_DEFINE(svc_tcp_b##n, n, 67)
REP64(SVC_TCP_B)

#define SVC_TCP_B_ENTRY(n) svc_tcp_b##n,
const svc_fn svc_tcp_b_table[64] = { REP64(SVC_TCP_B_ENTRY) };
