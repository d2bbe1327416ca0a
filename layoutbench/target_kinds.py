"""The kinds of target and the settings each one's ``[targets.NAME]`` table takes: plain data, read by
the profile's checks (:mod:`layoutbench.profile`, :mod:`layoutbench.validate`) and by the targets package
that makes them (:mod:`layoutbench.targets`)."""

from __future__ import annotations

#: the settings every kind takes (besides ``kind``, ``image`` and ``timeout``)
COMMON_SETTINGS = ("perf", "pin", "success_exit", "layout_cost", "run_cost")
_QEMU = ("append", "memory", "machine", "cpu", "accel", "initrd", "debug_exit", "qemu", "extra_args")
_SSH = ("host", "port", "user", "identity", "ssh_config", "known_hosts", "connect_timeout", "remote_dir", "args",
        "command", "install", "reboot", "reboot_command", "boot_id_command", "boot_timeout", "boot_poll", "collect",
        "host_id")
#: kind → the settings of its ``[targets.NAME]`` table beyond COMMON_SETTINGS; a key in neither is a
#: mistake the profile is refused for (a misspelt ``miss_weight`` would otherwise be silently ignored)
SETTINGS: dict[str, tuple[str, ...]] = {
    "local": ("args", "command"),
    "qemu": _QEMU,
    "cachegrind": ("args", "i1", "d1", "ll", "miss_weight", "guest_metrics"),
    "qemu-icache": (*_QEMU, "i1", "miss_weight", "plugin", "icount", "rtc", "guest_metrics"),
    "ssh": _SSH,
    "labgrid": ("env", "role", "image_key", "state", "off_state", "boot_args", "host_id"),
    "labgrid-places": (*_SSH, "coordinator", "places", "tags", "acquire_timeout", "parallel"),
}


#: kind → (module of layoutbench.targets, class, the Python package it needs beyond layoutbench's own).
#: A module is imported only when a target of its kind is made; a new kind is one line here.
KINDS: dict[str, tuple[str, str, str | None]] = {
    "local": ("local", "LocalTarget", None),
    "qemu": ("qemu", "QemuTarget", None),
    "cachegrind": ("cachegrind", "CachegrindTarget", None),
    "qemu-icache": ("qemu_icache", "QemuIcacheTarget", None),
    "ssh": ("ssh", "SshTarget", "asyncssh"),
    "labgrid": ("labgrid", "LabgridTarget", "labgrid"),
    "labgrid-places": ("places", "PlaceTarget", "labgrid"),
}
