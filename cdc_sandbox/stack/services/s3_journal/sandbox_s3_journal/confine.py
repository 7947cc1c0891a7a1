"""LocalStack start hooks that keep one sandbox's LocalStack to itself (native backend; installed with the journal).

- The gateway listens on the address `GATEWAY_LISTEN` names. LocalStack 4.12's Twisted server passes the address to
  IPv6 endpoints only and opens an IPv4 one on every interface (`localstack/runtime/server/twisted.py`), which would
  put the whole lake, behind credentials LocalStack never checks, on the network.
- S3 keeps the bytes of its objects under `$SANDBOX_S3_STORAGE` instead of the fixed `/tmp/localstack-s3-storage`
  (`DEFAULT_S3_TMP_DIR` in `localstack/services/s3/provider.py`), which every LocalStack on the machine shares: a
  second sandbox could not write there, or would delete the first one's bucket directory with its own.

Both run before the gateway opens and before the S3 provider is built (on the first S3 request). This runs inside
LocalStack's own interpreter: it imports LocalStack, never the sandbox.
"""

from __future__ import annotations

import os

from localstack.runtime import hooks


class _LoopbackEndpoints:
    """Twisted's `endpoints` module as LocalStack's server module sees it, with IPv4 listeners bound to the gateway's
    own address."""

    def __init__(self, endpoints, addresses: dict[int, str]):
        self._endpoints = endpoints
        self._addresses = addresses

    def __getattr__(self, name):
        return getattr(self._endpoints, name)

    def TCP4ServerEndpoint(self, reactor, port, *args, **kwargs):  # noqa: N802 (Twisted's name)
        kwargs.setdefault("interface", self._addresses.get(port, "127.0.0.1"))
        return self._endpoints.TCP4ServerEndpoint(reactor, port, *args, **kwargs)


@hooks.on_infra_start()
def bind_gateway_to_its_address():
    from localstack import config
    from localstack.runtime.server import twisted as server

    addresses = {listen.port: listen.host for listen in config.GATEWAY_LISTEN if not config.is_ipv6_address(listen.host)}
    if not isinstance(server.endpoints, _LoopbackEndpoints):
        server.endpoints = _LoopbackEndpoints(server.endpoints, addresses)


@hooks.on_infra_start()
def keep_s3_storage_private():
    directory = os.environ.get("SANDBOX_S3_STORAGE")
    if not directory:
        return
    from localstack.services.s3 import provider

    os.makedirs(directory, mode=0o700, exist_ok=True)
    provider.DEFAULT_S3_TMP_DIR = directory
