/* boot/start_info.c - the PVH struct hvm_start_info and the command line */
#include "types.h"
#include "boot.h"

#define HVM_START_MAGIC 0x336ec578u

struct hvm_start_info {
	u32 magic;
	u32 version;
	u32 flags;
	u32 nr_modules;
	u64 modlist_paddr;
	u64 cmdline_paddr;
	u64 rsdp_paddr;
	u64 memmap_paddr;
	u32 memmap_entries;
	u32 reserved;
};

u64 pvh_start_info_paddr;	/* set by pvh.S */
static char cmdline_buf[1024];
static bool cmdline_done;

const char *pvh_cmdline(void)
{
	const struct hvm_start_info *si;
	const char *src;
	size_t i = 0;

	if (cmdline_done)
		return cmdline_buf;
	cmdline_done = true;
	cmdline_buf[0] = 0;
	if (!pvh_start_info_paddr)
		return cmdline_buf;
	si = (const struct hvm_start_info *)(uintptr_t)pvh_start_info_paddr;
	if (si->magic != HVM_START_MAGIC || !si->cmdline_paddr || si->cmdline_paddr >= (1ull << 30))
		return cmdline_buf;
	src = (const char *)(uintptr_t)si->cmdline_paddr;
	while (src[i] && i < sizeof(cmdline_buf) - 1) {
		cmdline_buf[i] = src[i];
		i++;
	}
	cmdline_buf[i] = 0;
	return cmdline_buf;
}
