from server.cli.cli import main

main()
