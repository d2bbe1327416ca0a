/* net/svc_udp.c - UDP services on ports 2000..2063 */
#include "net.h"
#include "svc_gen.h"
#include "rep.h"

#define SVC_UDP(n) SVC_DEFINE(svc_udp##n, n, 133)
REP64(SVC_UDP)

#define SVC_UDP_ENTRY(n) svc_udp##n,
const svc_fn svc_udp_table[UDP_NSVC] = { REP64(SVC_UDP_ENTRY) };

svc_fn udp_service(u16 port)
{
	if (port < UDP_SVC_BASE || port >= UDP_SVC_BASE + UDP_NSVC)
		return NULL;
	return svc_udp_table[port - UDP_SVC_BASE];
}
