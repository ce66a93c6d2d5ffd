"""Static mounts: a checkout whose bundle is not built yet answers 404 for it, not a 500."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.routing import Mount

from gradtrace.api.pages import OptionalStaticFiles


def test_a_missing_bundle_directory_is_a_404_and_starts_serving_once_built(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    app = Starlette(routes=[Mount("/dist", OptionalStaticFiles(directory=str(dist), check_dir=False))])

    async def scenario() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            assert (await client.get("/dist/app.js")).status_code == 404
            dist.mkdir()
            (dist / "app.js").write_text("export {};\n")
            served = await client.get("/dist/app.js")
            assert served.status_code == 200 and served.text == "export {};\n"

    asyncio.run(scenario())
