from hwprobe.cli import main

main()
