"""Zeroconf (mDNS) advertisement of the server as `_wyoming._tcp.local.`, which Home Assistant discovers.

Home Assistant connects to the advertised address, so it must be one a client can reach: when the server listens
on every interface (0.0.0.0 or ::), the host's primary address is advertised instead of the wildcard.
"""
from __future__ import annotations

import ipaddress
import logging
import socket

import ifaddr
from zeroconf import InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

_LOG = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."

# Connecting a UDP socket sends nothing; it only makes the kernel choose the interface (and so the source address)
# it would route to this address through. The mDNS group is on every LAN and never leaves it.
_PROBE_ADDRESS = ("224.0.0.251", 5353)


def default_name() -> str:
    return f"chorus-{socket.gethostname().split('.')[0]}"


def primary_address() -> str:
    """The address other hosts on the LAN most likely reach this one at; loopback only if there is nothing else."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(_PROBE_ADDRESS)
            address = str(probe.getsockname()[0])
        if not ipaddress.ip_address(address).is_unspecified:
            return address
    except OSError:  # no route: fall back to what the interfaces carry
        pass
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if ip.is_IPv4 and isinstance(ip.ip, str) and not ipaddress.ip_address(ip.ip).is_loopback:
                return str(ip.ip)
    _LOG.warning("no network interface besides loopback; advertising 127.0.0.1")
    return "127.0.0.1"


def advertised_address(bind_host: str, configured: str | None) -> str:
    """The configured address, else the listening one unless it is a wildcard, else the primary address."""
    if configured:
        return configured
    try:
        if not ipaddress.ip_address(bind_host).is_unspecified:
            return bind_host
    except ValueError:  # a host name: advertise what it resolves to
        return socket.gethostbyname(bind_host)
    return primary_address()


class Advertisement:
    """Registers one `_wyoming._tcp` service on start() and withdraws it on stop()."""

    def __init__(self, name: str, address: str, port: int, interfaces: tuple[str, ...] = ()):
        if ipaddress.ip_address(address).is_unspecified:
            raise ValueError(f"cannot advertise the wildcard address {address}")
        self.name = name
        self.address = address
        self.port = port
        self._interfaces = list(interfaces) if interfaces else None
        self._zeroconf: AsyncZeroconf | None = None
        self._info: AsyncServiceInfo | None = None

    async def start(self) -> None:
        ip_version = IPVersion.V6Only if ipaddress.ip_address(self.address).version == 6 else IPVersion.V4Only
        self._zeroconf = AsyncZeroconf(ip_version=ip_version, interfaces=self._interfaces or InterfaceChoice.All)
        self._info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{self.name}.{SERVICE_TYPE}",
            parsed_addresses=[self.address],
            port=self.port,
        )
        # Another host may already use the name; a suffixed name beats not being discoverable. Registering returns
        # the task that sends the announcements: wait for it, so "advertising" below is true when logged.
        announced = await self._zeroconf.async_register_service(self._info, allow_name_change=True)
        await announced
        _LOG.info("zeroconf: advertising %r at %s:%s", self._info.name, self.address, self.port)

    async def stop(self) -> None:
        if self._zeroconf is None:
            return
        zeroconf, self._zeroconf = self._zeroconf, None
        if self._info is not None:
            goodbyes = await zeroconf.async_unregister_service(self._info)
            await goodbyes  # sent in a task: closing first would drop them, and browsers would keep the entry
        await zeroconf.async_close()
        _LOG.info("zeroconf: withdrawn")
