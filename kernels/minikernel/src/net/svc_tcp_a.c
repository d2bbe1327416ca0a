/* net/svc_tcp_a.c - TCP services on ports 1000..1063 */
#include "net.h"
#include "svc_gen.h"
#include "rep.h"

#define SVC_TCP_A(n) SVC_DEFINE(svc_tcp_a##n, n, 1)
REP64(SVC_TCP_A)

#define SVC_TCP_A_ENTRY(n) svc_tcp_a##n,
const svc_fn svc_tcp_a_table[64] = { REP64(SVC_TCP_A_ENTRY) };

svc_fn tcp_service(u16 port)
{
	u32 idx;

	if (port < TCP_SVC_BASE || port >= TCP_SVC_BASE + TCP_NSVC)
		return NULL;
	idx = port - TCP_SVC_BASE;
	return idx < 64 ? svc_tcp_a_table[idx] : svc_tcp_b_table[idx - 64];
}
