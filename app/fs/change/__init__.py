"""Change: every tool that alters the disk. `write_file` (`write.py`), `edit_file` (`edit.py`,
its bounded diff in `edit_diff.py`, each edit placed by the one matcher, `match.py`, a miss
shown its closest block by `closest.py`) and `apply_patch` (`patch.py`: the patch read by
`patch_parse.py` and `patch_unified.py` into `patch_types.py`'s sections, its hunks placed by
`patch_place.py`, its diff `patch_diff.py`'s) replace files atomically (`atomic.py`: a temp
name and a rename, nothing half-written) under one winner per expected hash (`locks.py`), making the
folders on their way and removing them again on failure (`folders.py`); `move_file` (`move.py`)
after the check that a folder carries nothing a rule denies out of its rule (`exposure.py`);
`copy_file` (`copy.py`, with `copying.py` for one file and `copy_tree.py` for a folder);
`delete` into the root's trash (`trash.py`), where a replaced file is kept too (`versions.py`),
emptied only by the person who runs the server (`purge.py`; `restore.py` for `--trash` and
`--restore`). The trash's names and generation counter are `layout.py`'s, its records and items
read from disk `inventory.py`'s, its running account and trimming past
`trash_max_bytes`/`trash_max_items` `ledger.py`'s; the start-up sweep of temp files a crash left
behind, `sweep.py`'s."""
