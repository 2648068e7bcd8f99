"""Read-only git history of a root (docs/tools.md#history-git); see `store` for the threat model.

The entry points the tools call are `ops.py`'s: `log.py` (git_log), `show.py` (git_show: a
commit, or a file at a commit), `diff.py` (git_diff and its pages), with `worktree.py` (the
working-tree side, read through the choke point) and `gitindex.py` (`.git/index` read in
windows). Beneath them: `gitdir.py` (the call's `.git` handle, its refusals and refs),
`revs.py` (naming commits), `commits.py` (a commit's text, date, subject), `walk.py` (log
order, path limiting, the cursor), `trees.py` (tree reading, deny rules, what a comparison
left out), `changes.py` (the walk of two trees, resumable by position), `listing.py` (pages
of changes: renames, the signed cursor), `denied.py` (blobs ever seen at a denied path),
`textdiff.py` (two blobs' diff, through `app.fs.text.udiff`).

Objects are read by bounded decoders of their own: `store.py` (the objects of one call, from
files opened beneath `.git/objects`), `loose.py`, `packidx.py` (pack indexes, by `pread`),
`packs.py` (pack entries' headers), `chains.py` (delta chains, checked before they are
built), `delta.py`, `inflate.py` (zlib inflated no further than asked), `raw.py` (one
object's bytes within a request, its id checked), `objects.py` (commits and tags),
`treeobj.py` (a tree's entries, parsed as needed), `errors.py` (the refusals that name an
object; the call's work budget).
"""
