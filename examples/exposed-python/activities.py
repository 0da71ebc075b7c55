"""The team's activities: where the I/O of the migration would be (here, a stand-in)."""

from __future__ import annotations

from temporalio import activity


@activity.defn
async def copy_rows(database: str) -> int:
    activity.logger.info("copying %s", database)
    return 1000 + len(database)


@activity.defn
async def switch_traffic(database: str) -> str:
    activity.logger.info("switching %s", database)
    return f"{database}-new"


@activity.defn
async def drop_copy(database: str) -> None:
    activity.logger.info("dropping the copy of %s", database)
