from gate.entry import main

raise SystemExit(main())
