from gate.cli.entry import main

raise SystemExit(main())
