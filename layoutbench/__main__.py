from .native import main

main()
