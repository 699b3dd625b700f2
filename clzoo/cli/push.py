"""`clzoo push`: a run published as a preset on the Hugging Face Hub (or, `--dry-run`, written to
a folder), or written as one of clzoo's built-in presets (`--builtin NAME`)."""

from clzoo.cli.arguments import add_overwrite, user_path


def add_parser(commands):
    p = commands.add_parser("push", help="publish a run as a preset on the Hugging Face Hub")
    p.add_argument("run", help="run folder from clzoo train (with eval/ if you ran clzoo eval)")
    p.add_argument("handle", nargs="?", help="hf://owner/repo (not with --builtin)")
    p.add_argument("--dry-run", type=user_path, metavar="DIR",
                   help="write the exact folder to DIR; upload nothing")
    p.add_argument("--builtin", metavar="NAME",
                   help="maintainers: write the run as clzoo's built-in preset NAME (the package's "
                        "presets folder, which pretrained/ links to) and its registry.json entry")
    p.add_argument("--private", action="store_true", help="create the Hub repository as private")
    add_overwrite(p)
    p.set_defaults(func=_push)


def checks(args):
    """Before Keras: one destination (a handle or `--builtin`), and a free built-in name."""
    if (args.handle is None) == (args.builtin is None):
        raise ValueError("clzoo push takes hf://owner/repo or --builtin NAME (one of them)")
    if args.builtin is not None:
        if args.dry_run or args.private:
            raise ValueError("--builtin writes clzoo's own presets folder; --dry-run and --private "
                             "are for hf:// pushes")
        from clzoo.presets.builtin_entry import check_builtin_name

        check_builtin_name(args.builtin, args.overwrite)


def _push(args):
    from clzoo.presets import push_preset

    if args.builtin is not None:
        from clzoo.presets.builtin_entry import add_builtin

        folder, entry = add_builtin(args.run, args.builtin, overwrite=args.overwrite)
        print(f"wrote the built-in preset {folder} and its registry.json entry (pinned "
              f"{entry['checksums_sha256'][:12]}...); {folder.name} loads with "
              f"Encoder.from_preset({folder.name!r})")
        return 0

    result = push_preset(args.run, args.handle, dry_run=args.dry_run, private=args.private,
                         overwrite=args.overwrite)
    print(f"wrote the preset to {result} (nothing uploaded)" if args.dry_run else f"uploaded: {result}")
    return 0
