"""The memory service: writes, entries by id, the searchable mirror, sync, purge, recovery,
porting."""
