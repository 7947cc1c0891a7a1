"""Where a server process really listens, read from the system (not from the sandbox's config): every sandbox
service must listen on the loopback interface alone."""

from __future__ import annotations

import ipaddress

import psutil


def listening_addresses(pid: int) -> list[str]:
    """`host:port` of every TCP socket that the process or one of its children listens on ([] if it is gone)."""
    try:
        root = psutil.Process(pid)
        family = [root, *root.children(recursive=True)]
    except psutil.Error:
        return []
    found = set()
    for process in family:
        try:
            sockets = process.net_connections(kind="tcp")
        except psutil.Error:
            continue
        found |= {_spelled(s.laddr.ip, s.laddr.port) for s in sockets if s.status == psutil.CONN_LISTEN}
    return sorted(found)


def beyond_loopback(addresses: list[str]) -> list[str]:
    """The addresses among `addresses` that other machines can reach."""
    return [address for address in addresses if not _is_loopback(address.rsplit(":", 1)[0].strip("[]"))]


def _is_loopback(host: str) -> bool:
    ip = ipaddress.ip_address(host)
    mapped = getattr(ip, "ipv4_mapped", None)  # a Java server's 127.0.0.1 shows as ::ffff:127.0.0.1
    return (mapped or ip).is_loopback


def _spelled(ip: str, port: int) -> str:
    host = ipaddress.ip_address(ip)
    mapped = getattr(host, "ipv4_mapped", None)
    if mapped is not None:
        return f"{mapped}:{port}"
    return f"[{ip}]:{port}" if host.version == 6 else f"{ip}:{port}"
