"""The DuckDB schema as an ordered list of migrations; a file records which ones it has applied.

Append a migration to change the schema; never edit one that has shipped. JSON documents are kept
as VARCHAR so no DuckDB extension has to be downloaded (there may be no network).
"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "studies, configurations, measurements, designs, models, decisions, exports",
        """
        CREATE SEQUENCE study_id_seq START 1;
        CREATE TABLE studies (
            id          INTEGER PRIMARY KEY DEFAULT nextval('study_id_seq'),
            name        VARCHAR NOT NULL UNIQUE,
            description VARCHAR NOT NULL DEFAULT '',
            objective   VARCHAR NOT NULL,
            direction   VARCHAR NOT NULL CHECK (direction IN ('minimize', 'maximize')),
            runner      VARCHAR NOT NULL,
            spec        VARCHAR NOT NULL,
            created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        -- The exhaustive table behind a table study (what a TableRunner looks up).
        CREATE TABLE table_rows (
            study_id   INTEGER NOT NULL,
            config_key VARCHAR NOT NULL,
            value      DOUBLE,
            status     VARCHAR NOT NULL,
            error      VARCHAR,
            PRIMARY KEY (study_id, config_key)
        );
        CREATE SEQUENCE measurement_id_seq START 1;
        CREATE TABLE measurements (
            id          BIGINT PRIMARY KEY DEFAULT nextval('measurement_id_seq'),
            study_id    INTEGER NOT NULL,
            config_key  VARCHAR NOT NULL,
            repeat      INTEGER NOT NULL,
            value       DOUBLE,
            status      VARCHAR NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'invalid')),
            error       VARCHAR,
            host        VARCHAR,
            started_at  TIMESTAMP,
            finished_at TIMESTAMP,
            strategy    VARCHAR,
            step        INTEGER,
            design_id   INTEGER,
            metadata    VARCHAR,
            recorded_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            UNIQUE (study_id, config_key, repeat)
        );
        CREATE SEQUENCE design_id_seq START 1;
        CREATE TABLE designs (
            id         INTEGER PRIMARY KEY DEFAULT nextval('design_id_seq'),
            study_id   INTEGER NOT NULL,
            name       VARCHAR NOT NULL,
            kind       VARCHAR NOT NULL,
            formula    VARCHAR,
            params     VARCHAR NOT NULL DEFAULT '{}',
            criteria   VARCHAR NOT NULL DEFAULT '{}',
            step       INTEGER,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        CREATE TABLE design_rows (
            design_id  INTEGER NOT NULL,
            position   INTEGER NOT NULL,
            config_key VARCHAR NOT NULL,
            forced     BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (design_id, position)
        );
        CREATE SEQUENCE model_id_seq START 1;
        CREATE TABLE models (
            id           INTEGER PRIMARY KEY DEFAULT nextval('model_id_seq'),
            study_id     INTEGER NOT NULL,
            step         INTEGER,
            formula      VARCHAR NOT NULL,
            transform    VARCHAR NOT NULL DEFAULT 'none',
            box_cox_lambda DOUBLE,
            coefficients VARCHAR NOT NULL,
            anova        VARCHAR NOT NULL,
            summary      VARCHAR NOT NULL DEFAULT '{}',
            created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        CREATE SEQUENCE decision_id_seq START 1;
        CREATE TABLE decisions (
            id          INTEGER PRIMARY KEY DEFAULT nextval('decision_id_seq'),
            study_id    INTEGER NOT NULL,
            step        INTEGER,
            kind        VARCHAR NOT NULL,
            proposed    VARCHAR NOT NULL,
            chosen      VARCHAR,
            outcome     VARCHAR NOT NULL CHECK (outcome IN ('proposed', 'accepted', 'edited', 'rejected', 'auto')),
            actor       VARCHAR NOT NULL,
            explanation VARCHAR NOT NULL DEFAULT '',
            evidence    VARCHAR NOT NULL DEFAULT '{}',
            created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        CREATE SEQUENCE export_id_seq START 1;
        CREATE TABLE exports (
            id         INTEGER PRIMARY KEY DEFAULT nextval('export_id_seq'),
            study_id   INTEGER NOT NULL,
            format     VARCHAR NOT NULL,
            path       VARCHAR,
            bytes      BIGINT,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
    (
        2,
        "comparisons of search strategies (offline benchmarks) and their runs",
        """
        CREATE SEQUENCE comparison_id_seq START 1;
        CREATE TABLE comparisons (
            id         INTEGER PRIMARY KEY DEFAULT nextval('comparison_id_seq'),
            name       VARCHAR NOT NULL,
            study      VARCHAR,
            params     VARCHAR NOT NULL DEFAULT '{}',
            summary    VARCHAR NOT NULL DEFAULT '{}',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        -- One row per (strategy, repetition); trace = best-so-far slowdown after each measurement (JSON).
        CREATE TABLE comparison_runs (
            comparison_id INTEGER NOT NULL,
            strategy      VARCHAR NOT NULL,
            rep           INTEGER NOT NULL,
            seed          BIGINT NOT NULL,
            value         DOUBLE,
            slowdown      DOUBLE,
            best_slowdown DOUBLE,
            budget_used   INTEGER NOT NULL,
            config        VARCHAR,
            trace         VARCHAR,
            PRIMARY KEY (comparison_id, strategy, rep)
        );
        """,
    ),
    (
        3,
        "a person's note on a decision",
        """
        ALTER TABLE decisions ADD COLUMN note VARCHAR;
        """,
    ),
    (
        4,
        "a decision can be withdrawn (kept in the log, no longer applied)",
        """
        ALTER TABLE decisions ADD COLUMN withdrawn_at TIMESTAMP;
        """,
    ),
    (
        5,
        "a study's notes (Markdown), for the people who tune it and for its report",
        """
        CREATE TABLE study_notes (
            study_id   INTEGER PRIMARY KEY,
            text       VARCHAR NOT NULL,
            updated_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
    (
        6,
        "DiffTune: CPUs, decoded basic blocks, their measured throughputs, parameter tables, evaluations",
        """
        -- One row per CPU that measured anything: experiments never mix CPUs.
        CREATE TABLE cpus (
            cpu_id     VARCHAR PRIMARY KEY,
            vendor     VARCHAR NOT NULL,
            family     INTEGER NOT NULL,
            model      INTEGER NOT NULL,
            stepping   INTEGER,
            microcode  VARCHAR,
            model_name VARCHAR,
            mcpu       VARCHAR,
            first_seen TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        -- A block is decoded once per machine (and decoder version): the instructions as JSON.
        CREATE TABLE blocks (
            hex        VARCHAR NOT NULL,
            decoder    VARCHAR NOT NULL,
            n_instr    INTEGER NOT NULL,
            decoded    VARCHAR NOT NULL,
            decoded_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (hex, decoder)
        );
        -- Cycles per 100 iterations on one CPU; pass 1, 2... are independent re-measurements.
        CREATE TABLE block_measurements (
            hex           VARCHAR NOT NULL,
            cpu_id        VARCHAR NOT NULL,
            pass          INTEGER NOT NULL,
            status        VARCHAR NOT NULL,
            cycles_min    DOUBLE,
            cycles_median DOUBLE,
            repeats       VARCHAR,
            error         VARCHAR,
            measured_at   TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (hex, cpu_id, pass)
        );
        CREATE SEQUENCE param_table_id_seq START 1;
        CREATE TABLE param_tables (
            id         INTEGER PRIMARY KEY DEFAULT nextval('param_table_id_seq'),
            name       VARCHAR NOT NULL UNIQUE,
            arch       VARCHAR NOT NULL,
            provenance VARCHAR NOT NULL DEFAULT '{}',
            body       VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        CREATE SEQUENCE simulator_evaluation_id_seq START 1;
        CREATE TABLE simulator_evaluations (
            id         INTEGER PRIMARY KEY DEFAULT nextval('simulator_evaluation_id_seq'),
            arch       VARCHAR NOT NULL,
            truth      VARCHAR NOT NULL,
            cpu_id     VARCHAR,
            summary    VARCHAR NOT NULL DEFAULT '{}',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        CREATE TABLE simulator_predictions (
            evaluation_id INTEGER NOT NULL,
            hex           VARCHAR NOT NULL,
            predictor     VARCHAR NOT NULL,
            cycles        DOUBLE,
            truth         DOUBLE,
            PRIMARY KEY (evaluation_id, hex, predictor)
        );
        """,
    ),
    (
        7,
        "DiffTune: simulated data sets (random tables' cycles; the rows live in Parquet shards beside the database)",
        """
        CREATE SEQUENCE simulated_dataset_id_seq START 1;
        -- A shard row's block indexes the JSON list of hexes; its seed alone redraws the table (over model's
        -- resource model). The folder is relative to the database's folder; samples 0..samples_done-1 are stored.
        CREATE TABLE simulated_datasets (
            id             INTEGER PRIMARY KEY DEFAULT nextval('simulated_dataset_id_seq'),
            name           VARCHAR NOT NULL UNIQUE,
            arch           VARCHAR NOT NULL,
            blocks         VARCHAR NOT NULL,
            model          VARCHAR NOT NULL,
            folder         VARCHAR NOT NULL,
            samples_done   BIGINT NOT NULL DEFAULT 0,
            samples_wanted BIGINT NOT NULL,
            created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
            updated_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
    (
        8,
        "DiffTune: trained surrogates (checkpoints beside the database) and parameter-learning experiments",
        """
        CREATE SEQUENCE surrogate_id_seq START 1;
        -- A surrogate trained on one simulated data set; checkpoint and history.csv live in folder (relative
        -- to the database's folder). config holds the network sizes and optimiser settings.
        CREATE TABLE surrogates (
            id          INTEGER PRIMARY KEY DEFAULT nextval('surrogate_id_seq'),
            name        VARCHAR NOT NULL UNIQUE,
            dataset     VARCHAR NOT NULL,
            config      VARCHAR NOT NULL,
            folder      VARCHAR NOT NULL,
            epochs_done INTEGER NOT NULL DEFAULT 0,
            val_mape    DOUBLE,
            test_mape   DOUBLE,
            seconds     DOUBLE NOT NULL DEFAULT 0,
            created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
            updated_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        CREATE SEQUENCE difftune_experiment_id_seq START 1;
        -- One experiment (recovery, cross-arch, this-cpu): its test-split predictions are the evaluation
        -- evaluation_id; summary holds the settings, the baselines' accuracy, costs and learning curves.
        CREATE TABLE difftune_experiments (
            id            INTEGER PRIMARY KEY DEFAULT nextval('difftune_experiment_id_seq'),
            kind          VARCHAR NOT NULL,
            surrogate     VARCHAR NOT NULL,
            evaluation_id INTEGER NOT NULL,
            summary       VARCHAR NOT NULL DEFAULT '{}',
            created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
    (
        9,
        "cost model for tensor programs: evaluations (grouped cross-validation of models) and trained models",
        """
        CREATE SEQUENCE costmodel_evaluation_id_seq START 1;
        -- One grouped cross-validation of several models on one data set (graphs grouped by program);
        -- summary holds the settings, the per-model aggregates, the noise floor and the timings.
        CREATE TABLE costmodel_evaluations (
            id         INTEGER PRIMARY KEY DEFAULT nextval('costmodel_evaluation_id_seq'),
            name       VARCHAR NOT NULL,
            data       VARCHAR NOT NULL,
            task       VARCHAR NOT NULL,
            summary    VARCHAR NOT NULL DEFAULT '{}',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        -- Per configuration of each held-out graph: what a model (one seed, one fold) predicted.
        CREATE TABLE costmodel_predictions (
            evaluation_id INTEGER NOT NULL,
            model         VARCHAR NOT NULL,
            seed          INTEGER NOT NULL,
            fold          INTEGER NOT NULL,
            graph         VARCHAR NOT NULL,
            program       VARCHAR NOT NULL,
            config        INTEGER NOT NULL,
            runtime       DOUBLE,
            prediction    DOUBLE
        );
        CREATE SEQUENCE costmodel_id_seq START 1;
        -- A model trained on a whole data set (checkpoint in folder, relative to the database's folder).
        CREATE TABLE costmodels (
            id         INTEGER PRIMARY KEY DEFAULT nextval('costmodel_id_seq'),
            name       VARCHAR NOT NULL UNIQUE,
            data       VARCHAR NOT NULL,
            task       VARCHAR NOT NULL,
            params     VARCHAR NOT NULL DEFAULT '{}',
            folder     VARCHAR NOT NULL,
            seconds    DOUBLE NOT NULL DEFAULT 0,
            summary    VARCHAR NOT NULL DEFAULT '{}',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
]
