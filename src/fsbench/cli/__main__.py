from fsbench.cli.app import main

main()
