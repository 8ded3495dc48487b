from deepinfer.cli import main

raise SystemExit(main())
