from .app import create_app as create_app
from .mcp_server import MCP_PATH as MCP_PATH
from .mcp_server import build_mcp as build_mcp
from .replica import ReplicaConfigError as ReplicaConfigError
from .replica import serve_replica as serve_replica
