"""The timeline of a repetition: typed actions (lab/events.py) turned into commands
(actions.py), run at their times by a thread (scheduler.py), recorded in events.csv
(record.py); step.py makes them steps of the repetition, controllers included."""
