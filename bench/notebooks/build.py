"""Generate crane's runnable benchmark of crash/fix notebook pairs.

Every case below is a compact definition: the code cells of the buggy notebook, which code cell
is the target, the recorded execution order, the edits that make the fixed notebook, and the
small data files the notebooks read. Running this script rewrites, next to it, one folder per
case (`buggy.ipynb`, `fixed.ipynb`, data files), `manifest.json`, the case table in README.md,
and the bundled example notebook in `examples/`. Output is deterministic: same definitions, same bytes.

    .venv/bin/python bench/notebooks/build.py

Needs only the standard library and nbformat.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXAMPLE_PATH = REPO / "examples" / "titanic_like.ipynb"

LIBRARIES = {"pandas", "numpy", "sklearn", "torch", "tensorflow", "other", "NBspecific"}
CATEGORIES = {
    "API misuse",
    "data confusion",
    "implementation error",
    "ML model confusion",
    "NB specific",
    "library cause",
    "environment",
}


@dataclass(frozen=True)
class MD:
    """A markdown cell; it does not count in code-cell indices."""

    text: str


@dataclass
class Case:
    name: str
    library: str
    category: str
    needs_runtime: bool
    exception: str
    message_contains: str
    diagnosis: str
    cells: list  # code cells (str) and markdown cells (MD), in visual order
    target: int  # 0-based index among code cells
    fix: dict[int, str] = field(default_factory=dict)  # code-cell index -> fixed source
    counts: list | None = None  # execution_count per code cell of buggy; default: visual order
    fixed_counts: list | None = None  # execution_count per code cell of fixed; default: counts
    files: dict[str, Callable[[], str]] = field(default_factory=dict)


def code(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


def visual_counts(n_code: int, target: int) -> list:
    return [i + 1 if i < target else None for i in range(n_code)]


# ---------------------------------------------------------------------------------------------
# Data files: small CSVs made with seeded stdlib generators.


def csv_text(header: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if value is None else value for value in row])
    return out.getvalue()


def table(seed: int, n: int, columns: list, order: list[str] | None = None) -> str:
    """Rows from per-column generators `(name, fn(rng, row) -> value)`; None is an empty field.

    Generators run in list order so a column may depend on earlier ones; `order` sets the
    column order in the file when it differs.
    """
    rng = random.Random(seed)
    header = order or [name for name, _ in columns]
    rows = []
    for i in range(n):
        row: dict = {"_i": i}
        for name, make in columns:
            row[name] = make(rng, row)
        rows.append([row[name] for name in header])
    return csv_text(header, rows)


def weighted(rng: random.Random, choices: dict) -> object:
    return rng.choices(list(choices), weights=list(choices.values()))[0]


FIRST_NAMES = ["James", "Mary", "John", "Anna", "William", "Elizabeth", "Thomas", "Helen"]
LAST_NAMES = ["Smith", "Brown", "Taylor", "Wilson", "Kelly", "Murphy", "Andersson", "Nilsson"]


def passengers_csv() -> str:
    def name(rng, r):
        title = "Mr" if r["Sex"] == "male" else rng.choice(["Mrs", "Miss"])
        return f"{rng.choice(LAST_NAMES)}, {title}. {rng.choice(FIRST_NAMES)}"

    def survived(rng, r):
        p = (0.78 if r["Sex"] == "female" else 0.22) - 0.12 * (r["Pclass"] - 1)
        return int(rng.random() < p)

    def cabin(rng, r):
        if r["Pclass"] == 1 and rng.random() < 0.7:
            return f"{rng.choice('ABCDE')}{rng.randint(1, 120)}"
        return None

    return table(
        11,
        240,
        [
            ("PassengerId", lambda rng, r: r["_i"] + 1),
            ("Pclass", lambda rng, r: weighted(rng, {1: 0.25, 2: 0.2, 3: 0.55})),
            ("Sex", lambda rng, r: weighted(rng, {"male": 0.64, "female": 0.36})),
            ("Name", name),
            ("Age", lambda rng, r: None if rng.random() < 0.2 else float(rng.randint(1, 74))),
            ("SibSp", lambda rng, r: rng.choice([0, 0, 0, 0, 1, 1, 2, 3])),
            ("Parch", lambda rng, r: rng.choice([0, 0, 0, 0, 0, 1, 2])),
            ("Ticket", lambda rng, r: f"{rng.choice(['', 'PC ', 'A/5 '])}{rng.randint(1000, 399999)}"),
            ("Fare", lambda rng, r: round(rng.uniform(5, 30) * (4 - r["Pclass"]) ** 1.5, 2)),
            ("Cabin", cabin),
            ("Embarked", lambda rng, r: None if r["_i"] in (61, 170) else weighted(rng, {"S": 0.7, "C": 0.2, "Q": 0.1})),
            ("Survived", survived),
        ],
        order=["PassengerId", "Survived", "Pclass", "Name", "Sex", "Age", "SibSp", "Parch",
               "Ticket", "Fare", "Cabin", "Embarked"],
    )


def houses_csv() -> str:
    def price(rng, r):
        return int(20000 + 55 * r["GrLivArea"] + 9000 * r["OverallQual"] + 1.5 * r["LotArea"]
                   + 300 * (r["YearBuilt"] - 1900) + rng.gauss(0, 15000))

    return table(
        1,
        300,
        [
            ("Id", lambda rng, r: r["_i"] + 1),
            ("LotArea", lambda rng, r: rng.randint(3000, 20000)),
            ("YearBuilt", lambda rng, r: rng.randint(1900, 2010)),
            ("OverallQual", lambda rng, r: rng.randint(1, 10)),
            ("GrLivArea", lambda rng, r: rng.randint(600, 3500)),
            ("Neighborhood", lambda rng, r: rng.choice(["NAmes", "CollgCr", "OldTown", "Edwards", "Somerst"])),
            ("SalePrice ", price),
        ],
    )


def zip_customers_csv() -> str:
    return table(
        2,
        250,
        [
            ("customer_id", lambda rng, r: 1000 + r["_i"]),
            ("zipcode", lambda rng, r: rng.choice([2134, 2139, 10001, 10027, 60614, 94110, 94703, 7030])),
            ("age", lambda rng, r: rng.randint(16, 85)),
            ("plan", lambda rng, r: rng.choice(["Basic", "Plus", "Premium"])),
            ("monthly_spend", lambda rng, r: round(rng.uniform(5, 120), 2)),
        ],
    )


def dated_sales_csv() -> str:
    return table(
        3,
        300,
        [
            ("order_id", lambda rng, r: 5000 + r["_i"] - (1 if r["_i"] % 97 == 96 else 0)),
            ("order_date", lambda rng, r: f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"),
            ("store", lambda rng, r: rng.choice(["north", "south", "east", "west"])),
            ("units", lambda rng, r: rng.randint(1, 12)),
            ("unit_price", lambda rng, r: round(rng.uniform(2, 40), 2)),
        ],
    )


def merge_customers_csv() -> str:
    return table(
        4,
        80,
        [
            ("customer_id", lambda rng, r: 1 + r["_i"]),
            ("age", lambda rng, r: rng.randint(18, 80)),
            ("segment", lambda rng, r: rng.choice(["consumer", "corporate", "home office"])),
        ],
    )


def merge_orders_csv() -> str:
    return table(
        5,
        400,
        [
            ("OrderID", lambda rng, r: 90000 + r["_i"]),
            ("CustomerID", lambda rng, r: rng.randint(1, 80)),
            ("amount", lambda rng, r: round(rng.uniform(-20, 400), 2)),
        ],
    )


def cars_csv() -> str:
    makes = {"Toyota": ["Corolla", "Camry", "RAV4"], "Ford": ["Focus", "F-150", "Escape"],
             "BMW": ["3 Series", "X5"], "Honda": ["Civic", "Accord", "CR-V"]}

    def msrp(rng, r):
        base = {"Toyota": 24000, "Ford": 27000, "BMW": 46000, "Honda": 25000}[r["Make"]]
        value = int(base + 120 * (r["Engine HP"] or 150) + rng.gauss(0, 3000))
        return f"${value:,}"

    return table(
        6,
        200,
        [
            ("Make", lambda rng, r: rng.choice(list(makes))),
            ("Model", lambda rng, r: rng.choice(makes[r["Make"]])),
            ("Year", lambda rng, r: rng.randint(2008, 2023)),
            ("Engine HP", lambda rng, r: None if rng.random() < 0.05 else rng.randint(120, 400)),
            ("MSRP", msrp),
        ],
    )


def listings_csv() -> str:
    def price(rng, r):
        age = r["age"] if r["age"] is not None else 40
        return int(50000 + 120 * r["sqft"] + 8000 * r["rooms"] - 300 * age + rng.gauss(0, 20000))

    return table(
        7,
        200,
        [
            ("sqft", lambda rng, r: rng.randint(600, 3200)),
            ("rooms", lambda rng, r: rng.randint(1, 6)),
            ("age", lambda rng, r: None if rng.random() < 0.09 else rng.randint(0, 80)),
            ("price", price),
        ],
    )


def store_sales_csv() -> str:
    rows = []
    rng = random.Random(8)
    for store in ["S01", "S02", "S03", "S04", "S05", "S06"]:
        for month in range(1, 13):
            rows.append([store, month, round(rng.uniform(8000, 30000), 2)])
    # Corrections booked as extra rows for a month already reported.
    rows.append(["S03", 4, -1250.0])
    rows.append(["S05", 11, 830.5])
    return csv_text(["store", "month", "revenue"], rows)


def sensor_csv() -> str:
    def failure(rng, r):
        risk = 0.02 + 0.5 * (r["vibration"] > 0.8) + 0.2 * (r["temp"] > 75)
        return int(rng.random() < risk)

    return table(
        9,
        300,
        [
            ("temp", lambda rng, r: round(rng.gauss(60, 10), 2)),
            ("humidity", lambda rng, r: round(rng.uniform(20, 90), 2)),
            ("pressure", lambda rng, r: round(rng.gauss(1013, 8), 2)),
            ("vibration", lambda rng, r: round(rng.uniform(0, 1), 3)),
            ("failure", failure),
        ],
    )


def applicants_csv() -> str:
    def approved(rng, r):
        return int(r["income"] > 2.5 * r["debt"] and rng.random() < 0.85)

    return table(
        10,
        200,
        [
            ("income", lambda rng, r: rng.randint(18000, 150000)),
            ("debt", lambda rng, r: rng.randint(0, 60000)),
            ("age", lambda rng, r: None if rng.random() < 0.05 else rng.randint(19, 70)),
            ("employment", lambda rng, r: rng.choice(["salaried", "self-employed", "unemployed"])),
            ("approved", approved),
        ],
    )


def daily_demand_csv() -> str:
    def demand(rng, r):
        weekly = [0.8, 1.0, 1.0, 1.1, 1.3, 1.6, 1.2][r["_i"] % 7]
        return round(100 * weekly + rng.gauss(0, 8), 1)

    def date(rng, r):
        month_days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        day = r["_i"]
        month = 0
        while day >= month_days[month]:
            day -= month_days[month]
            month += 1
        return f"2023-{month + 1:02d}-{day + 1:02d}"

    return table(12, 365, [("date", date), ("demand", demand)])


def transactions_csv() -> str:
    return table(
        13,
        300,
        [
            ("amount", lambda rng, r: round(rng.lognormvariate(3.5, 1.0), 2)),
            ("fee", lambda rng, r: round(rng.uniform(0, 3), 2)),
            ("channel", lambda rng, r: rng.choice(["web", "pos", "atm"])),
            ("items", lambda rng, r: rng.randint(1, 9)),
            ("is_fraud", lambda rng, r: int(rng.random() < 0.05)),
        ],
    )


def features_train_csv() -> str:
    def target(rng, r):
        return int(r["f1"] + 0.5 * r["f3"] - r["f5"] + rng.gauss(0, 0.5) > 0)

    return table(14, 300, [*[(f"f{k}", lambda rng, r: round(rng.gauss(0, 1), 4)) for k in range(1, 6)],
                           ("target", target)])


def features_test_csv() -> str:
    return table(15, 100, [("id", lambda rng, r: 301 + r["_i"]),
                           *[(f"f{k}", lambda rng, r: round(rng.gauss(0, 1), 4)) for k in range(1, 6)]])


def patients_csv() -> str:
    def outcome(rng, r):
        bmi = r["bmi"] if r["bmi"] is not None else 30
        return int(0.03 * (r["glucose"] - 110) + 0.1 * (bmi - 30) + rng.gauss(0, 1) > 0.5)

    return table(
        16,
        300,
        [
            ("pregnancies", lambda rng, r: rng.randint(0, 10)),
            ("glucose", lambda rng, r: rng.randint(70, 200)),
            ("blood_pressure", lambda rng, r: rng.randint(50, 110)),
            ("bmi", lambda rng, r: None if rng.random() < 0.04 else round(rng.uniform(18, 48), 1)),
            ("age", lambda rng, r: rng.randint(21, 80)),
            ("outcome", outcome),
        ],
    )


def city_rows(seed: int, n: int, cities: list[str]) -> str:
    def price(rng, r):
        factor = {"Paris": 9, "Lyon": 5, "Marseille": 4, "Toulouse": 4, "Nice": 6}[r["city"]]
        return int(factor * 1000 * r["area"] ** 0.9 / 10 + rng.gauss(0, 15000))

    return table(
        seed,
        n,
        [
            ("city", lambda rng, r: rng.choice(cities)),
            ("rooms", lambda rng, r: rng.randint(1, 6)),
            ("area", lambda rng, r: rng.randint(18, 160)),
            ("price", price),
        ],
    )


def wine_quality_csv() -> str:
    rng = random.Random(17)
    qualities = [3] + [weighted(rng, {4: 0.08, 5: 0.4, 6: 0.38, 7: 0.12, 8: 0.02}) for _ in range(299)]
    rng.shuffle(qualities)
    rows = []
    for quality in qualities:
        rows.append([
            round(rng.gauss(8.3, 1.5), 2),
            round(rng.gauss(0.53 - 0.04 * (quality - 5), 0.15), 3),
            round(rng.gauss(10.4 + 0.5 * (quality - 5), 0.9), 2),
            round(rng.gauss(2.5, 1.0), 2),
            quality,
        ])
    return csv_text(["fixed_acidity", "volatile_acidity", "alcohol", "residual_sugar", "quality"], rows)


def stores_csv() -> str:
    regions = ["North"] * 7 + ["South"] * 80 + ["East"] * 63 + ["West"] * 50
    return table(
        18,
        200,
        [
            ("store_id", lambda rng, r: f"ST{r['_i'] + 1:03d}"),
            ("region", lambda rng, r: regions[(r["_i"] * 37) % 200]),
            ("sqft", lambda rng, r: rng.randint(2000, 12000)),
            ("footfall", lambda rng, r: rng.randint(200, 4000)),
            ("revenue", lambda rng, r: round(rng.uniform(1e5, 9e5), 2)),
        ],
    )


def churn_csv() -> str:
    def churn(rng, r):
        p = 0.1 + 0.3 * (r["Plan"] == "monthly") - 0.004 * r["Tenure"]
        return int(rng.random() < max(p, 0.02))

    return table(
        19,
        300,
        [
            ("Age", lambda rng, r: rng.randint(18, 80)),
            ("Income", lambda rng, r: rng.randint(15000, 140000)),
            ("Tenure", lambda rng, r: rng.randint(0, 72)),
            ("City", lambda rng, r: rng.choice(["Oslo", "Bergen", "Trondheim", "Stavanger"])),
            ("Plan", lambda rng, r: rng.choice(["monthly", "yearly", "two-year"])),
            ("churn", churn),
        ],
    )


def energy_csv() -> str:
    def consumption(rng, r):
        return round(1.5 + 0.08 * abs(r["temp"] - 18) + 0.6 * r["occupancy"] + 0.05 * r["hour"]
                     + rng.gauss(0, 0.4), 3)

    return table(
        20,
        300,
        [
            ("temp", lambda rng, r: round(rng.uniform(-5, 32), 1)),
            ("humidity", lambda rng, r: rng.randint(20, 95)),
            ("occupancy", lambda rng, r: rng.randint(0, 6)),
            ("hour", lambda rng, r: rng.randint(0, 23)),
            ("consumption", consumption),
        ],
    )


def subscribers_csv() -> str:
    def churned(rng, r):
        p = 0.08 + 0.1 * r["support_calls"] - 0.003 * r["tenure"]
        return int(rng.random() < min(max(p, 0.02), 0.9))

    return table(
        21,
        200,
        [
            ("tenure", lambda rng, r: rng.randint(0, 72)),
            ("monthly", lambda rng, r: round(rng.uniform(20, 110), 2)),
            ("support_calls", lambda rng, r: rng.choice([0, 0, 0, 1, 1, 2, 3, 5])),
            ("total", lambda rng, r: round(r["tenure"] * r["monthly"], 2)),
            ("region", lambda rng, r: rng.choice(["north", "south", "east", "west"])),
            ("churned", churned),
        ],
    )


def fruit_csv() -> str:
    shapes = {"apple": (165, 7.5, 7.6, 0.78), "mandarin": (85, 6.0, 4.4, 0.80),
              "orange": (190, 7.4, 7.9, 0.77), "lemon": (150, 6.5, 8.9, 0.72)}

    def measure(k, spread):
        return lambda rng, r: round(rng.gauss(shapes[r["fruit_name"]][k], spread), 2)

    return table(
        22,
        160,
        [
            ("fruit_name", lambda rng, r: rng.choice(list(shapes))),
            ("weight", measure(0, 15)),
            ("width", measure(1, 0.4)),
            ("height", measure(2, 0.4)),
            ("color_score", measure(3, 0.03)),
        ],
    )


def insurance_csv() -> str:
    def charges(rng, r):
        value = 2500 + 250 * r["age"] + 320 * (r["bmi"] - 25) + 23000 * (r["smoker"] == "yes")
        return round(max(value + rng.gauss(0, 3000), 1100), 2)

    return table(
        23,
        300,
        [
            ("age", lambda rng, r: rng.randint(18, 64)),
            ("bmi", lambda rng, r: round(rng.uniform(16, 48), 2)),
            ("children", lambda rng, r: rng.choice([0, 0, 1, 1, 2, 3])),
            ("smoker", lambda rng, r: weighted(rng, {"no": 0.8, "yes": 0.2})),
            ("region", lambda rng, r: rng.choice(["northeast", "northwest", "southeast", "southwest"])),
            ("charges", charges),
        ],
    )


def ratings_csv() -> str:
    def quality(rng, r):
        score = 6 + 0.8 * r["alcohol_z"] - 0.7 * r["acidity_z"] + rng.gauss(0, 0.7)
        return min(max(round(score), 4), 8)

    return table(
        24,
        300,
        [
            ("alcohol_z", lambda rng, r: round(rng.gauss(0, 1), 3)),
            ("acidity_z", lambda rng, r: round(rng.gauss(0, 1), 3)),
            ("sugar_z", lambda rng, r: round(rng.gauss(0, 1), 3)),
            ("sulphates_z", lambda rng, r: round(rng.gauss(0, 1), 3)),
            ("quality", quality),
        ],
    )


def monthly_sales_csv() -> str:
    rows = []
    rng = random.Random(25)
    for k in range(36):
        season = [0.9, 0.85, 1.0, 1.05, 1.1, 1.2, 1.25, 1.2, 1.05, 1.0, 1.1, 1.4][k % 12]
        rows.append([f"{2021 + k // 12}-{k % 12 + 1:02d}-01", round((200 + 3 * k) * season + rng.gauss(0, 6), 1)])
    return csv_text(["month", "sales"], rows)


def housing_features_csv() -> str:
    return table(
        26,
        250,
        [
            ("median_income", lambda rng, r: round(rng.lognormvariate(1.3, 0.4), 3)),
            ("housing_age", lambda rng, r: rng.randint(1, 52)),
            ("rooms", lambda rng, r: rng.randint(400, 6000)),
            ("bedrooms", lambda rng, r: int(r["rooms"] * rng.uniform(0.15, 0.25))),
            ("population", lambda rng, r: rng.randint(300, 5000)),
            ("households", lambda rng, r: int(r["population"] / rng.uniform(2.2, 3.4))),
            ("value", lambda rng, r: int(40000 * r["median_income"] + 900 * r["housing_age"] + rng.gauss(0, 30000))),
            ("ocean_proximity", lambda rng, r: rng.choice(["INLAND", "NEAR BAY", "<1H OCEAN", "NEAR OCEAN"])),
        ],
    )


def telecom_csv() -> str:
    def churn(rng, r):
        p = 0.05 + 0.12 * r["support_calls"] + 0.004 * (r["monthly_charges"] - 60)
        return int(rng.random() < min(max(p, 0.02), 0.95))

    return table(
        27,
        300,
        [
            ("tenure", lambda rng, r: rng.randint(1, 72)),
            ("monthly_charges", lambda rng, r: round(rng.uniform(20, 120), 2)),
            ("support_calls", lambda rng, r: rng.choice([0, 0, 0, 1, 1, 2, 3, 4])),
            ("contract_months", lambda rng, r: rng.choice([1, 12, 24])),
            ("total_charges", lambda rng, r: round(r["tenure"] * r["monthly_charges"], 2)),
            ("churn", churn),
        ],
    )


# ---------------------------------------------------------------------------------------------
# The cases.

CASES: list[Case] = []


def case(**kwargs) -> None:
    CASES.append(Case(**kwargs))


# ----- pandas ---------------------------------------------------------------------------------

case(
    name="pandas_header_trailing_space",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="KeyError",
    message_contains="'SalePrice'",
    diagnosis=(
        "The CSV header spells the target column 'SalePrice ' with a trailing space, so "
        "df['SalePrice'] raises KeyError although the column looks present. Strip the column "
        "names after reading the file."
    ),
    files={"houses.csv": houses_csv},
    cells=[
        MD("# House prices: ridge regression baseline"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.linear_model import Ridge
            from sklearn.metrics import mean_absolute_error
            from sklearn.model_selection import train_test_split
        """),
        code("""
            df = pd.read_csv('houses.csv')
            print(df.shape)
            df.head()
        """),
        MD("## Feature engineering"),
        code("""
            df['HouseAge'] = 2024 - df['YearBuilt']
            df['QualArea'] = df['OverallQual'] * df['GrLivArea']
            df = pd.get_dummies(df, columns=['Neighborhood'], drop_first=True, dtype=float)
        """),
        code("""
            y = np.log1p(df['SalePrice'])
            X = df.drop(columns=['Id', 'SalePrice', 'YearBuilt'])
            X.shape
        """),
        MD("## Model"),
        code("""
            X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.2, random_state=42)
            model = Ridge(alpha=1.0).fit(X_train, y_train)
        """),
        code("""
            mean_absolute_error(np.expm1(y_valid), np.expm1(model.predict(X_valid)))
        """),
    ],
    target=3,
    fix={1: code("""
        df = pd.read_csv('houses.csv')
        df.columns = df.columns.str.strip()
        print(df.shape)
        df.head()
    """)},
)

case(
    name="pandas_str_accessor_on_int_zip",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="AttributeError",
    message_contains="Can only use .str accessor with string values",
    diagnosis=(
        "read_csv parses the zipcode column as int64 (leading zeros lost), so "
        "df['zipcode'].str raises AttributeError: the .str accessor needs strings. Convert with "
        "astype(str).str.zfill(5) first."
    ),
    files={"customers.csv": zip_customers_csv},
    cells=[
        MD("# Customer spend by region"),
        code("""
            import numpy as np
            import pandas as pd
        """),
        code("""
            df = pd.read_csv('customers.csv')
            df.info()
        """),
        code("""
            df = df[df['age'].between(18, 90)].copy()
            df['plan'] = df['plan'].str.lower()
            df['plan'].value_counts()
        """),
        code("""
            df['region'] = df['zipcode'].str[:1]
            df.groupby('region')['monthly_spend'].mean()
        """),
        code("""
            summary = df.pivot_table(index='region', columns='plan', values='monthly_spend', aggfunc='mean')
            summary.round(1)
        """),
    ],
    target=3,
    fix={3: code("""
        df['region'] = df['zipcode'].astype(str).str.zfill(5).str[:1]
        df.groupby('region')['monthly_spend'].mean()
    """)},
)

case(
    name="pandas_dt_accessor_unparsed_dates",
    library="pandas",
    category="API misuse",
    needs_runtime=True,
    exception="AttributeError",
    message_contains="Can only use .dt accessor with datetimelike values",
    diagnosis=(
        "order_date was read from the CSV without parse_dates, so it holds strings; "
        "sales['order_date'].dt raises AttributeError. Parse the column as dates when reading."
    ),
    files={"sales.csv": dated_sales_csv},
    cells=[
        MD("# Monthly revenue"),
        code("""
            import matplotlib.pyplot as plt
            import numpy as np
            import pandas as pd
        """),
        code("""
            sales = pd.read_csv('sales.csv')
            sales['revenue'] = sales['units'] * sales['unit_price']
        """),
        code("""
            sales = sales.drop_duplicates('order_id')
            sales.describe()
        """),
        code("""
            sales['month'] = sales['order_date'].dt.month
            monthly = sales.groupby('month')['revenue'].sum()
        """),
        code("""
            monthly.plot(kind='bar', title='Revenue per month')
            plt.tight_layout()
        """),
    ],
    target=3,
    fix={1: code("""
        sales = pd.read_csv('sales.csv', parse_dates=['order_date'])
        sales['revenue'] = sales['units'] * sales['unit_price']
    """)},
)

case(
    name="pandas_merge_key_named_differently",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="KeyError",
    message_contains="'customer_id'",
    diagnosis=(
        "orders.csv names the customer key 'CustomerID' while customers.csv uses "
        "'customer_id'; merge(on='customer_id') raises KeyError because the left frame has no "
        "such column. Use left_on='CustomerID', right_on='customer_id'."
    ),
    files={"customers.csv": merge_customers_csv, "orders.csv": merge_orders_csv},
    cells=[
        MD("# Orders per customer segment"),
        code("""
            import pandas as pd
        """),
        code("""
            customers = pd.read_csv('customers.csv')
            orders = pd.read_csv('orders.csv')
            print(customers.shape, orders.shape)
        """),
        code("""
            orders = orders[orders['amount'] > 0].copy()
            orders['big_order'] = orders['amount'] > 100
        """),
        code("""
            data = orders.merge(customers, on='customer_id', how='left')
            data.head()
        """),
        code("""
            data.groupby('segment')['amount'].agg(['mean', 'count'])
        """),
    ],
    target=3,
    fix={3: code("""
        data = orders.merge(customers, left_on='CustomerID', right_on='customer_id', how='left')
        data.head()
    """)},
)

case(
    name="pandas_to_numeric_currency_strings",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Unable to parse string",
    diagnosis=(
        "The MSRP column holds formatted strings such as '$36,945'; pd.to_numeric cannot parse "
        "the dollar sign and thousands separator and raises ValueError. Strip '$' and ',' first."
    ),
    files={"cars.csv": cars_csv},
    cells=[
        MD("# Car prices by make"),
        code("""
            import numpy as np
            import pandas as pd
        """),
        code("""
            cars = pd.read_csv('cars.csv')
            cars.head()
        """),
        code("""
            cars = cars.dropna(subset=['Engine HP'])
            cars['Age'] = 2024 - cars['Year']
        """),
        code("""
            cars['MSRP'] = pd.to_numeric(cars['MSRP'])
            cars['log_price'] = np.log(cars['MSRP'])
        """),
        code("""
            cars.groupby('Make')['log_price'].mean().sort_values()
        """),
    ],
    target=3,
    fix={3: code("""
        cars['MSRP'] = pd.to_numeric(cars['MSRP'].str.replace('[$,]', '', regex=True))
        cars['log_price'] = np.log(cars['MSRP'])
    """)},
)

case(
    name="pandas_astype_int_with_missing_age",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="IntCastingNaNError",
    message_contains="Cannot convert non-finite values (NA or inf) to integer",
    diagnosis=(
        "Age has missing values in passengers.csv, so (df['Age'] // 10) contains NaN and "
        ".astype(int) raises IntCastingNaNError. Impute Age before binning."
    ),
    files={"passengers.csv": passengers_csv},
    cells=[
        MD("# Survival by age band"),
        code("""
            import numpy as np
            import pandas as pd
        """),
        code("""
            df = pd.read_csv('passengers.csv')
            df.head()
        """),
        code("""
            df['FamilySize'] = df['SibSp'] + df['Parch'] + 1
            df['Fare'] = df['Fare'].fillna(df['Fare'].median())
        """),
        code("""
            df['AgeBand'] = (df['Age'] // 10).astype(int)
            df.groupby('AgeBand')['Survived'].mean()
        """),
        code("""
            df.groupby(['AgeBand', 'Sex'])['Survived'].mean().unstack()
        """),
    ],
    target=3,
    fix={3: code("""
        df['Age'] = df['Age'].fillna(df['Age'].median())
        df['AgeBand'] = (df['Age'] // 10).astype(int)
        df.groupby('AgeBand')['Survived'].mean()
    """)},
)

case(
    name="pandas_assign_predictions_after_dropna",
    library="pandas",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="does not match length of index",
    diagnosis=(
        "Predictions are made for the rows left after dropna (the age column has missing "
        "values), so the array is shorter than df; assigning it as a new column raises "
        "ValueError. Assign through df.loc[clean.index, ...]."
    ),
    files={"listings.csv": listings_csv},
    cells=[
        MD("# Listing price model"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.linear_model import LinearRegression
        """),
        code("""
            df = pd.read_csv('listings.csv')
            df.describe()
        """),
        code("""
            features = ['sqft', 'rooms', 'age']
            train = df.dropna(subset=features)
            model = LinearRegression().fit(train[features], train['price'])
        """),
        code("""
            clean = df.dropna(subset=features)
            df['predicted_price'] = model.predict(clean[features])
        """),
        code("""
            df['residual'] = df['price'] - df['predicted_price']
            df['residual'].describe()
        """),
    ],
    target=3,
    fix={3: code("""
        clean = df.dropna(subset=features)
        df.loc[clean.index, 'predicted_price'] = model.predict(clean[features])
    """)},
)

case(
    name="pandas_pivot_duplicate_entries",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Index contains duplicate entries, cannot reshape",
    diagnosis=(
        "store_sales.csv has correction rows that repeat a (store, month) pair, so pivot "
        "cannot place two values in one cell and raises ValueError. Use pivot_table with "
        "aggfunc='sum'."
    ),
    files={"store_sales.csv": store_sales_csv},
    cells=[
        MD("# Store revenue heatmap"),
        code("""
            import matplotlib.pyplot as plt
            import pandas as pd
            import seaborn as sns
        """),
        code("""
            sales = pd.read_csv('store_sales.csv')
            sales.shape
        """),
        code("""
            sales['revenue_k'] = sales['revenue'] / 1000
        """),
        code("""
            table = sales.pivot(index='store', columns='month', values='revenue_k')
            table.round(1)
        """),
        code("""
            sns.heatmap(table, cmap='viridis')
            plt.title('Revenue (k) per store and month')
        """),
    ],
    target=3,
    fix={3: code("""
        table = sales.pivot_table(index='store', columns='month', values='revenue_k', aggfunc='sum')
        table.round(1)
    """)},
)

# ----- numpy ----------------------------------------------------------------------------------

case(
    name="numpy_reshape_digits_as_mnist",
    library="numpy",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="cannot reshape array of size 115008 into shape (28,28)",
    diagnosis=(
        "load_digits images are 8x8 (64 pixels per row of X, 1797 rows), not 28x28 like MNIST; "
        "115008 values cannot be reshaped into (-1, 28, 28). Derive the side from X.shape[1]."
    ),
    cells=[
        MD("# Average digit images"),
        code("""
            import matplotlib.pyplot as plt
            import numpy as np
            from sklearn.datasets import load_digits
        """),
        code("""
            digits = load_digits()
            X = digits.data / 16.0
            y = digits.target
            X.shape
        """),
        code("""
            np.bincount(y)
        """),
        code("""
            images = X.reshape(-1, 28, 28)
            mean_three = images[y == 3].mean(axis=0)
        """),
        code("""
            plt.imshow(mean_three, cmap='gray')
            plt.axis('off')
        """),
    ],
    target=3,
    fix={3: code("""
        side = int(np.sqrt(X.shape[1]))
        images = X.reshape(-1, side, side)
        mean_three = images[y == 3].mean(axis=0)
    """)},
)

case(
    name="numpy_matmul_weights_before_bias_column",
    library="numpy",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="mismatch in its core dimension 0",
    diagnosis=(
        "w was sized from X_raw (4 features) before a bias column was prepended, so X has 5 "
        "columns and X @ w fails with a core-dimension mismatch (4 vs 5). Size w from X."
    ),
    cells=[
        MD("# Logistic regression from scratch"),
        code("""
            import numpy as np
            from sklearn.datasets import load_iris
        """),
        code("""
            iris = load_iris()
            X_raw = iris.data
            y = (iris.target == 2).astype(float)
        """),
        code("""
            X_std = (X_raw - X_raw.mean(axis=0)) / X_raw.std(axis=0)
            w = np.zeros(X_raw.shape[1])
            lr = 0.1
        """),
        code("""
            def sigmoid(z):
                return 1 / (1 + np.exp(-z))

            X = np.hstack([np.ones((X_std.shape[0], 1)), X_std])
        """),
        code("""
            for epoch in range(200):
                p = sigmoid(X @ w)
                w -= lr * X.T @ (p - y) / len(y)
        """),
        code("""
            accuracy = ((sigmoid(X @ w) > 0.5) == y).mean()
            accuracy
        """),
    ],
    target=4,
    fix={4: code("""
        w = np.zeros(X.shape[1])
        for epoch in range(200):
            p = sigmoid(X @ w)
            w -= lr * X.T @ (p - y) / len(y)
    """)},
)

case(
    name="numpy_hstack_rows_after_dropna",
    library="numpy",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="all the input array dimensions except for the concatenation axis must match exactly",
    diagnosis=(
        "The numeric block was built from the rows without missing age (fewer rows) while the "
        "one-hot block has one row per applicant; np.hstack needs equal row counts and raises "
        "ValueError. Drop the incomplete rows from the frame before building both blocks."
    ),
    files={"applicants.csv": applicants_csv},
    cells=[
        MD("# Loan approval features"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.linear_model import LogisticRegression
        """),
        code("""
            df = pd.read_csv('applicants.csv')
        """),
        code("""
            num = df[['income', 'debt', 'age']].dropna().to_numpy()
            num = (num - num.mean(axis=0)) / num.std(axis=0)
        """),
        code("""
            cats = sorted(df['employment'].unique())
            onehot = (df['employment'].to_numpy()[:, None] == np.array(cats)).astype(float)
        """),
        code("""
            X = np.hstack([num, onehot])
            y = df['approved'].to_numpy()
        """),
        code("""
            clf = LogisticRegression(max_iter=500).fit(X, y)
            clf.score(X, y)
        """),
    ],
    target=4,
    fix={2: code("""
        df = df.dropna(subset=['income', 'debt', 'age']).reset_index(drop=True)
        num = df[['income', 'debt', 'age']].to_numpy()
        num = (num - num.mean(axis=0)) / num.std(axis=0)
    """)},
)

case(
    name="numpy_loadtxt_label_column_index",
    library="numpy",
    category="data confusion",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index 5 is out of bounds for axis 1 with size 5",
    diagnosis=(
        "The sensor file has 5 columns (no timestamp column), so data[:, 5] is out of bounds "
        "for axis 1 of size 5. The label is column 4 and the features are columns 0-3."
    ),
    files={"sensor_readings.csv": sensor_csv},
    cells=[
        MD("# Predictive maintenance"),
        code("""
            import numpy as np
            from sklearn.linear_model import LogisticRegression
        """),
        code("""
            data = np.loadtxt('sensor_readings.csv', delimiter=',', skiprows=1)
            data.shape
        """),
        code("""
            data = data[data[:, 0] > -40]
        """),
        code("""
            X, y = data[:, 1:5], data[:, 5]
        """),
        code("""
            clf = LogisticRegression(max_iter=500).fit(X, y)
            clf.score(X, y)
        """),
    ],
    target=3,
    fix={3: code("""
        X, y = data[:, :4], data[:, 4]
    """)},
)

case(
    name="numpy_broadcast_row_statistics",
    library="numpy",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="operands could not be broadcast together with shapes (178,13) (178,)",
    diagnosis=(
        "mean and std were taken with axis=1 (one value per sample, shape (178,)) instead of "
        "per feature; X of shape (178, 13) cannot be broadcast against (178,). Use axis=0."
    ),
    cells=[
        MD("# PCA of the wine data by hand"),
        code("""
            import numpy as np
            from sklearn.datasets import load_wine
        """),
        code("""
            X, y = load_wine(return_X_y=True)
            X.shape
        """),
        code("""
            print(np.round(X.min(axis=0), 2))
            print(np.round(X.max(axis=0), 2))
        """),
        code("""
            mu = X.mean(axis=1)
            sigma = X.std(axis=1)
            X_scaled = (X - mu) / sigma
        """),
        code("""
            U, S, Vt = np.linalg.svd(X_scaled, full_matrices=False)
            explained = S ** 2 / (S ** 2).sum()
            explained[:3]
        """),
        code("""
            projected = X_scaled @ Vt[:2].T
            projected.shape
        """),
    ],
    target=3,
    fix={3: code("""
        mu = X.mean(axis=0)
        sigma = X.std(axis=0)
        X_scaled = (X - mu) / sigma
    """)},
)

case(
    name="numpy_windows_uneven_last_chunk",
    library="numpy",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="all input arrays must have the same shape",
    diagnosis=(
        "make_windows steps through the series in chunks of 7, but the series has 365 days, so "
        "the last chunk has 1 value and np.stack of unequal windows raises ValueError. Stop "
        "the range at len(series) - size + 1."
    ),
    files={"daily_demand.csv": daily_demand_csv},
    cells=[
        MD("# Weekly demand profile"),
        code("""
            import numpy as np
            import pandas as pd
        """),
        code("""
            demand = pd.read_csv('daily_demand.csv')['demand'].to_numpy(dtype=float)
            len(demand)
        """),
        code("""
            def make_windows(series, size):
                return np.stack([series[i:i + size] for i in range(0, len(series), size)])
        """),
        code("""
            demand = (demand - demand.mean()) / demand.std()
        """),
        code("""
            weeks = make_windows(demand, 7)
            weekly_profile = weeks.mean(axis=0)
        """),
        code("""
            weekly_profile.round(2)
        """),
    ],
    target=4,
    fix={2: code("""
        def make_windows(series, size):
            return np.stack([series[i:i + size] for i in range(0, len(series) - size + 1, size)])
    """)},
)

case(
    name="numpy_ufunc_on_object_array",
    library="numpy",
    category="data confusion",
    needs_runtime=True,
    exception="TypeError",
    message_contains="loop of ufunc does not support argument 0 of type",
    diagnosis=(
        "The frame has a string column (channel), so to_numpy() returns an object array and "
        "np.log1p on it raises TypeError. Keep only the numeric columns before converting."
    ),
    files={"transactions.csv": transactions_csv},
    cells=[
        MD("# Transaction anomalies"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.ensemble import IsolationForest
        """),
        code("""
            df = pd.read_csv('transactions.csv')
        """),
        code("""
            df = df[df['amount'] > 0]
            df['is_fraud'].mean()
        """),
        code("""
            values = df.drop(columns=['is_fraud']).to_numpy()
            log_values = np.log1p(values)
        """),
        code("""
            iso = IsolationForest(random_state=0).fit(log_values)
            scores = iso.score_samples(log_values)
        """),
    ],
    target=3,
    fix={3: code("""
        values = df.drop(columns=['is_fraud']).select_dtypes('number').to_numpy()
        log_values = np.log1p(values)
    """)},
)

# ----- scikit-learn ---------------------------------------------------------------------------

case(
    name="sklearn_test_file_has_id_column",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="X has 6 features, but RandomForestClassifier is expecting 5 features as input",
    diagnosis=(
        "test.csv carries an extra 'id' column, so test.to_numpy() has 6 columns while the "
        "forest was fitted on 5 features; predict raises ValueError. Drop 'id' first."
    ),
    files={"train.csv": features_train_csv, "test.csv": features_test_csv},
    cells=[
        MD("# Tabular classification submission"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.ensemble import RandomForestClassifier
        """),
        code("""
            train = pd.read_csv('train.csv')
            test = pd.read_csv('test.csv')
            train.shape, test.shape
        """),
        code("""
            X = train.drop(columns=['target']).to_numpy()
            y = train['target'].to_numpy()
        """),
        code("""
            model = RandomForestClassifier(n_estimators=50, random_state=0).fit(X, y)
        """),
        code("""
            X_test = test.to_numpy()
            test_pred = model.predict(X_test)
        """),
        code("""
            submission = pd.DataFrame({'id': test['id'], 'target': test_pred})
            submission.head()
        """),
    ],
    target=4,
    fix={4: code("""
        X_test = test.drop(columns=['id']).to_numpy()
        test_pred = model.predict(X_test)
    """)},
)

case(
    name="sklearn_nan_into_logistic_regression",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Input X contains NaN",
    diagnosis=(
        "The bmi column has missing values in patients.csv; LogisticRegression does not accept "
        "NaN and fit raises ValueError. Impute (e.g. SimpleImputer) in a pipeline."
    ),
    files={"patients.csv": patients_csv},
    cells=[
        MD("# Diabetes risk"),
        code("""
            import pandas as pd
            from sklearn.linear_model import LogisticRegression
            from sklearn.metrics import accuracy_score
            from sklearn.model_selection import train_test_split
        """),
        code("""
            df = pd.read_csv('patients.csv')
            df.describe()
        """),
        code("""
            X = df.drop(columns=['outcome'])
            y = df['outcome']
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        """),
        code("""
            clf = LogisticRegression(max_iter=1000)
            clf.fit(X_train, y_train)
        """),
        code("""
            accuracy_score(y_test, clf.predict(X_test))
        """),
    ],
    target=3,
    fix={3: code("""
        from sklearn.impute import SimpleImputer
        from sklearn.pipeline import make_pipeline

        clf = make_pipeline(SimpleImputer(strategy='median'), LogisticRegression(max_iter=1000))
        clf.fit(X_train, y_train)
    """)},
)

case(
    name="sklearn_string_column_into_tree",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="could not convert string to float",
    diagnosis=(
        "Sex and Embarked are text columns; DecisionTreeClassifier needs numeric input and fit "
        "raises ValueError converting 'male'/'female'. One-hot encode them first."
    ),
    files={"passengers.csv": passengers_csv},
    cells=[
        MD("# Titanic-style decision tree"),
        code("""
            import pandas as pd
            from sklearn.model_selection import cross_val_score
            from sklearn.tree import DecisionTreeClassifier
        """),
        code("""
            df = pd.read_csv('passengers.csv')
        """),
        code("""
            features = ['Pclass', 'Sex', 'Age', 'Fare', 'Embarked']
            df['Age'] = df['Age'].fillna(df['Age'].median())
            df['Embarked'] = df['Embarked'].fillna('S')
            X = df[features]
            y = df['Survived']
        """),
        code("""
            tree = DecisionTreeClassifier(max_depth=4, random_state=0)
            tree.fit(X, y)
        """),
        code("""
            cross_val_score(tree, X, y, cv=5).mean()
        """),
    ],
    target=3,
    fix={3: code("""
        X = pd.get_dummies(X, columns=['Sex', 'Embarked'], drop_first=True, dtype=float)
        tree = DecisionTreeClassifier(max_depth=4, random_state=0)
        tree.fit(X, y)
    """)},
)

case(
    name="sklearn_label_encoder_unseen_city",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="y contains previously unseen labels",
    diagnosis=(
        "The encoder was fitted on the cities of train.csv only; test.csv contains a city "
        "(Lyon) absent from training, so le.transform raises ValueError. Fit the encoder on "
        "the cities of both files (or use OneHotEncoder(handle_unknown='ignore'))."
    ),
    files={
        "train.csv": lambda: city_rows(28, 200, ["Paris", "Marseille", "Toulouse", "Nice"]),
        "test.csv": lambda: city_rows(29, 60, ["Paris", "Marseille", "Toulouse", "Nice", "Lyon"]),
    },
    cells=[
        MD("# Apartment prices"),
        code("""
            import pandas as pd
            from sklearn.ensemble import GradientBoostingRegressor
            from sklearn.preprocessing import LabelEncoder
        """),
        code("""
            train = pd.read_csv('train.csv')
            test = pd.read_csv('test.csv')
        """),
        code("""
            le = LabelEncoder()
            train['city_code'] = le.fit_transform(train['city'])
        """),
        code("""
            test['city_code'] = le.transform(test['city'])
        """),
        code("""
            features = ['city_code', 'rooms', 'area']
            gbr = GradientBoostingRegressor(random_state=0).fit(train[features], train['price'])
            test['predicted'] = gbr.predict(test[features])
        """),
    ],
    target=3,
    fix={2: code("""
        le = LabelEncoder().fit(pd.concat([train['city'], test['city']]))
        train['city_code'] = le.transform(train['city'])
    """)},
)

case(
    name="sklearn_stratify_single_member_class",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="only 1 member, which is too few",
    diagnosis=(
        "Quality 3 occurs in a single wine, so a stratified split cannot put it in both train "
        "and test and train_test_split raises ValueError. Drop or merge classes with fewer "
        "than 2 members before stratifying."
    ),
    files={"wine_quality.csv": wine_quality_csv},
    cells=[
        MD("# Wine quality classifier"),
        code("""
            import pandas as pd
            from sklearn.ensemble import RandomForestClassifier
            from sklearn.model_selection import train_test_split
        """),
        code("""
            wine = pd.read_csv('wine_quality.csv')
            wine['quality'].value_counts()
        """),
        code("""
            X = wine.drop(columns='quality')
            y = wine['quality']
        """),
        code("""
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=1)
        """),
        code("""
            rf = RandomForestClassifier(n_estimators=100, random_state=0).fit(X_train, y_train)
            rf.score(X_test, y_test)
        """),
    ],
    target=3,
    fix={3: code("""
        keep = y.map(y.value_counts()) >= 2
        X_train, X_test, y_train, y_test = train_test_split(X[keep], y[keep], test_size=0.2, stratify=y[keep], random_state=1)
    """)},
)

case(
    name="sklearn_kmeans_more_clusters_than_rows",
    library="sklearn",
    category="ML model confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="n_samples=7 should be >= n_clusters=10",
    diagnosis=(
        "k was chosen by choose_k on all 200 stores (10 clusters), but the model is fitted on "
        "the 7 stores of the North region; KMeans needs at least as many samples as clusters "
        "and raises ValueError. Choose k from the subset."
    ),
    files={"stores.csv": stores_csv},
    cells=[
        MD("# Store segmentation per region"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.cluster import KMeans
            from sklearn.preprocessing import StandardScaler
        """),
        code("""
            stores = pd.read_csv('stores.csv')
            stores['region'].value_counts()
        """),
        code("""
            def choose_k(frame):
                return max(2, int(np.sqrt(len(frame) / 2)))

            k = choose_k(stores)
        """),
        code("""
            north = stores[stores['region'] == 'North']
            features = north[['sqft', 'footfall', 'revenue']]
        """),
        code("""
            scaled = StandardScaler().fit_transform(features)
            km = KMeans(n_clusters=k, n_init=10, random_state=0).fit(scaled)
        """),
        code("""
            north = north.assign(cluster=km.labels_)
            north.groupby('cluster')['revenue'].mean()
        """),
    ],
    target=4,
    fix={4: code("""
        scaled = StandardScaler().fit_transform(features)
        km = KMeans(n_clusters=choose_k(north), n_init=10, random_state=0).fit(scaled)
    """)},
)

case(
    name="sklearn_scaler_fitted_under_other_name",
    library="sklearn",
    category="implementation error",
    needs_runtime=False,
    exception="NotFittedError",
    message_contains="This StandardScaler instance is not fitted yet",
    diagnosis=(
        "The training data was scaled by a fresh StandardScaler() instance; the 'scaler' "
        "object itself was never fitted, so scaler.transform raises NotFittedError. Use "
        "scaler.fit_transform on the training data."
    ),
    cells=[
        MD("# Breast cancer SVM"),
        code("""
            from sklearn.datasets import load_breast_cancer
            from sklearn.model_selection import train_test_split
            from sklearn.preprocessing import StandardScaler
            from sklearn.svm import SVC
        """),
        code("""
            X, y = load_breast_cancer(return_X_y=True)
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
        """),
        code("""
            scaler = StandardScaler()
            X_train_s = StandardScaler().fit_transform(X_train)
        """),
        code("""
            svc = SVC(C=1.0).fit(X_train_s, y_train)
        """),
        code("""
            X_test_s = scaler.transform(X_test)
            svc.score(X_test_s, y_test)
        """),
    ],
    target=4,
    fix={2: code("""
        scaler = StandardScaler()
        X_train_s = scaler.fit_transform(X_train)
    """)},
)

case(
    name="sklearn_column_transformer_case_mismatch",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="are not columns of the dataframe",
    diagnosis=(
        "churn.csv capitalises its feature columns (Age, Income, Tenure, City, Plan) but the "
        "ColumnTransformer lists them in lower case; fitting the pipeline raises ValueError "
        "because those columns are not in the frame."
    ),
    files={"churn.csv": churn_csv},
    cells=[
        MD("# Churn pipeline"),
        code("""
            import pandas as pd
            from sklearn.compose import ColumnTransformer
            from sklearn.linear_model import LogisticRegression
            from sklearn.model_selection import train_test_split
            from sklearn.pipeline import Pipeline
            from sklearn.preprocessing import OneHotEncoder, StandardScaler
        """),
        code("""
            df = pd.read_csv('churn.csv')
        """),
        code("""
            num_cols = ['age', 'income', 'tenure']
            cat_cols = ['city', 'plan']
            pre = ColumnTransformer([
                ('num', StandardScaler(), num_cols),
                ('cat', OneHotEncoder(handle_unknown='ignore'), cat_cols),
            ])
        """),
        code("""
            X = df.drop(columns=['churn'])
            y = df['churn']
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
        """),
        code("""
            pipe = Pipeline([('pre', pre), ('clf', LogisticRegression(max_iter=1000))])
            pipe.fit(X_train, y_train)
        """),
        code("""
            pipe.score(X_test, y_test)
        """),
    ],
    target=4,
    fix={2: code("""
        num_cols = ['Age', 'Income', 'Tenure']
        cat_cols = ['City', 'Plan']
        pre = ColumnTransformer([
            ('num', StandardScaler(), num_cols),
            ('cat', OneHotEncoder(handle_unknown='ignore'), cat_cols),
        ])
    """)},
)

case(
    name="sklearn_classifier_on_continuous_target",
    library="sklearn",
    category="ML model confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Unknown label type: continuous",
    diagnosis=(
        "y is the raw consumption column, float values such as 3.412, instead of the binary "
        "high_usage label; a classifier cannot fit a continuous target and raises ValueError."
    ),
    files={"energy.csv": energy_csv},
    cells=[
        MD("# High energy usage"),
        code("""
            import pandas as pd
            from sklearn.ensemble import RandomForestClassifier
        """),
        code("""
            df = pd.read_csv('energy.csv')
            df.head()
        """),
        code("""
            df['high_usage'] = (df['consumption'] > df['consumption'].median()).astype(int)
            X = df[['temp', 'humidity', 'occupancy', 'hour']]
            y = df['consumption']
        """),
        code("""
            clf = RandomForestClassifier(n_estimators=100, random_state=0).fit(X, y)
        """),
        code("""
            pd.Series(clf.feature_importances_, index=X.columns).sort_values()
        """),
    ],
    target=3,
    fix={2: code("""
        df['high_usage'] = (df['consumption'] > df['consumption'].median()).astype(int)
        X = df[['temp', 'humidity', 'occupancy', 'hour']]
        y = df['high_usage']
    """)},
)

case(
    name="sklearn_series_passed_as_features",
    library="sklearn",
    category="API misuse",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Expected a 2-dimensional container",
    diagnosis=(
        "df['sqft'] is a 1-D Series; LinearRegression.fit expects a 2-D feature matrix and "
        "raises ValueError. Pass df[['sqft']]."
    ),
    cells=[
        MD("# Price per square foot"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.linear_model import LinearRegression
        """),
        code("""
            rng = np.random.default_rng(3)
            df = pd.DataFrame({'sqft': rng.uniform(500, 3000, 150).round()})
            df['price'] = 100 * df['sqft'] + rng.normal(0, 20000, 150)
        """),
        code("""
            lr = LinearRegression().fit(df['sqft'], df['price'])
        """),
        code("""
            lr.coef_, lr.intercept_
        """),
    ],
    target=2,
    fix={2: code("""
        lr = LinearRegression().fit(df[['sqft']], df['price'])
    """)},
)

# ----- torch ----------------------------------------------------------------------------------

case(
    name="torch_linear_in_features_after_dummies",
    library="torch",
    category="ML model confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 shapes cannot be multiplied (200x8 and 5x16)",
    diagnosis=(
        "One-hot encoding the 4 regions makes 8 input columns, but the first Linear layer was "
        "declared with 5 in_features (one per raw column); model(X) fails with a matmul shape "
        "error. Use X.shape[1]."
    ),
    files={"subscribers.csv": subscribers_csv},
    cells=[
        MD("# Churn MLP in PyTorch"),
        code("""
            import numpy as np
            import pandas as pd
            import torch
            from torch import nn
        """),
        code("""
            df = pd.read_csv('subscribers.csv')
            X_df = pd.get_dummies(df.drop(columns=['churned']), columns=['region'], dtype=float)
            y = df['churned'].to_numpy()
        """),
        code("""
            X = torch.tensor(((X_df - X_df.mean()) / X_df.std()).to_numpy(), dtype=torch.float32)
            y_t = torch.tensor(y, dtype=torch.float32).unsqueeze(1)
        """),
        code("""
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            loss_fn = nn.BCEWithLogitsLoss()
        """),
        code("""
            for epoch in range(20):
                opt.zero_grad()
                loss = loss_fn(model(X), y_t)
                loss.backward()
                opt.step()
        """),
        code("""
            accuracy = ((model(X) > 0).float() == y_t).float().mean().item()
            accuracy
        """),
    ],
    target=4,
    fix={3: code("""
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(X.shape[1], 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        loss_fn = nn.BCEWithLogitsLoss()
    """)},
)

case(
    name="torch_conv_expects_rgb_gets_gray",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="to have 3 channels, but got 1 channels instead",
    diagnosis=(
        "The digit images are grayscale tensors of shape (N, 1, 8, 8) but SmallCNN defaults to "
        "in_channels=3; the first Conv2d rejects the batch. Build the model with "
        "in_channels=images.shape[1]."
    ),
    cells=[
        MD("# Small CNN on digits"),
        code("""
            import torch
            from sklearn.datasets import load_digits
            from torch import nn
            from torch.utils.data import DataLoader, TensorDataset
        """),
        code("""
            digits = load_digits()
            images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
            labels = torch.tensor(digits.target)
            images.shape
        """),
        code("""
            torch.manual_seed(0)
            loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)
        """),
        code("""
            class SmallCNN(nn.Module):
                def __init__(self, in_channels=3, n_classes=10):
                    super().__init__()
                    self.conv = nn.Conv2d(in_channels, 16, kernel_size=3, padding=1)
                    self.pool = nn.AdaptiveAvgPool2d(1)
                    self.fc = nn.Linear(16, n_classes)

                def forward(self, x):
                    x = torch.relu(self.conv(x))
                    return self.fc(self.pool(x).flatten(1))

            model = SmallCNN()
        """),
        code("""
            xb, yb = next(iter(loader))
            logits = model(xb)
            loss = nn.functional.cross_entropy(logits, yb)
        """),
        code("""
            loss.item()
        """),
    ],
    target=4,
    fix={3: code("""
        class SmallCNN(nn.Module):
            def __init__(self, in_channels=3, n_classes=10):
                super().__init__()
                self.conv = nn.Conv2d(in_channels, 16, kernel_size=3, padding=1)
                self.pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(16, n_classes)

            def forward(self, x):
                x = torch.relu(self.conv(x))
                return self.fc(self.pool(x).flatten(1))

        model = SmallCNN(in_channels=images.shape[1])
    """)},
)

case(
    name="torch_int64_counts_into_linear",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 must have the same dtype",
    diagnosis=(
        "CountVectorizer counts are int64, so torch.from_numpy gives a Long tensor; nn.Linear "
        "has float32 weights and the matmul raises RuntimeError. Convert X with .float()."
    ),
    cells=[
        MD("# Bag-of-words sentiment in PyTorch"),
        code("""
            import numpy as np
            import torch
            from sklearn.feature_extraction.text import CountVectorizer
            from torch import nn
        """),
        code("""
            rng = np.random.default_rng(0)
            good = ['great', 'excellent', 'love', 'fast', 'reliable']
            bad = ['poor', 'broken', 'slow', 'refund', 'awful']
            neutral = ['product', 'delivery', 'price', 'box', 'service']
            labels = rng.integers(0, 2, 300)
            texts = [' '.join(rng.choice((good if label else bad) + neutral, 6)) for label in labels]
        """),
        code("""
            vec = CountVectorizer()
            counts = vec.fit_transform(texts).toarray()
            counts.shape
        """),
        code("""
            X = torch.from_numpy(counts)
            y = torch.from_numpy(labels)
        """),
        code("""
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(X.shape[1], 8), nn.ReLU(), nn.Linear(8, 2))
        """),
        code("""
            logits = model(X)
            loss = nn.functional.cross_entropy(logits, y)
        """),
        code("""
            loss.item()
        """),
    ],
    target=5,
    fix={3: code("""
        X = torch.from_numpy(counts).float()
        y = torch.from_numpy(labels)
    """)},
)

case(
    name="torch_flatten_size_helper_forgets_pool",
    library="torch",
    category="implementation error",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="mat1 and mat2 shapes cannot be multiplied (32x144 and 576x10)",
    diagnosis=(
        "The classifier's in_features come from conv_output_size, which ignores the 2x2 max "
        "pooling: it gives 16*6*6=576 while the flattened feature map is 16*3*3=144, so the "
        "final Linear layer fails. Halve the side for the pooling."
    ),
    cells=[
        MD("# CNN with a computed flatten size"),
        code("""
            import torch
            from sklearn.datasets import load_digits
            from torch import nn
        """),
        code("""
            digits = load_digits()
            images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
            labels = torch.tensor(digits.target)
        """),
        code("""
            def conv_output_size(size, kernel, padding=0, stride=1):
                return (size + 2 * padding - kernel) // stride + 1

            side = conv_output_size(images.shape[-1], kernel=3)
            flat = 16 * side * side
        """),
        code("""
            torch.manual_seed(0)
            model = nn.Sequential(
                nn.Conv2d(1, 16, kernel_size=3), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(flat, 10),
            )
        """),
        code("""
            logits = model(images[:32])
            logits.shape
        """),
        code("""
            nn.functional.cross_entropy(logits, labels[:32]).item()
        """),
    ],
    target=4,
    fix={2: code("""
        def conv_output_size(size, kernel, padding=0, stride=1):
            return (size + 2 * padding - kernel) // stride + 1

        side = conv_output_size(images.shape[-1], kernel=3) // 2
        flat = 16 * side * side
    """)},
)

case(
    name="torch_cross_entropy_too_few_classes",
    library="torch",
    category="ML model confusion",
    needs_runtime=True,
    exception="IndexError",
    message_contains="Target 3 is out of bounds",
    diagnosis=(
        "fruit.csv has 4 fruit kinds (labels 0-3) but the output layer has N_CLASSES=3 units; "
        "CrossEntropyLoss gets target 3 for 3 logits and raises IndexError. Take the class "
        "count from the data."
    ),
    files={"fruit.csv": fruit_csv},
    cells=[
        MD("# Fruit classifier"),
        code("""
            import pandas as pd
            import torch
            from torch import nn
        """),
        code("""
            df = pd.read_csv('fruit.csv')
            df['label'] = df['fruit_name'].astype('category').cat.codes
        """),
        code("""
            X = torch.tensor(df[['weight', 'width', 'height', 'color_score']].to_numpy(), dtype=torch.float32)
            X = (X - X.mean(0)) / X.std(0)
            y = torch.tensor(df['label'].to_numpy(), dtype=torch.long)
        """),
        code("""
            N_CLASSES = 3
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, N_CLASSES))
        """),
        code("""
            loss = nn.CrossEntropyLoss()(model(X), y)
            loss.backward()
        """),
        code("""
            loss.item()
        """),
    ],
    target=4,
    fix={3: code("""
        N_CLASSES = df['label'].nunique()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, N_CLASSES))
    """)},
)

# ----- tensorflow / keras ---------------------------------------------------------------------

case(
    name="keras_input_shape_vs_one_hot_width",
    library="tensorflow",
    category="ML model confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="expected axis -1 of input shape to have value 5",
    diagnosis=(
        "The model's Input was declared with 5 features (the raw columns), but one-hot "
        "encoding smoker and region widened X to 9 columns; fit raises ValueError on the first "
        "Dense layer. Use shape=(X.shape[1],)."
    ),
    files={"insurance.csv": insurance_csv},
    cells=[
        MD("# Insurance charges with Keras"),
        code("""
            import numpy as np
            import pandas as pd
            from tensorflow import keras
            from tensorflow.keras import layers
        """),
        code("""
            df = pd.read_csv('insurance.csv')
            X = pd.get_dummies(df.drop(columns='charges'), columns=['smoker', 'region'], dtype=float)
            y = np.log(df['charges'].to_numpy())
        """),
        code("""
            X = ((X - X.mean()) / X.std()).to_numpy(dtype='float32')
        """),
        code("""
            keras.utils.set_random_seed(0)
            model = keras.Sequential([
                keras.Input(shape=(5,)),
                layers.Dense(16, activation='relu'),
                layers.Dense(1),
            ])
            model.compile(optimizer='adam', loss='mse')
        """),
        code("""
            history = model.fit(X, y, epochs=3, batch_size=32, verbose=0)
        """),
        code("""
            history.history['loss'][-1]
        """),
    ],
    target=4,
    fix={3: code("""
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.Input(shape=(X.shape[1],)),
            layers.Dense(16, activation='relu'),
            layers.Dense(1),
        ])
        model.compile(optimizer='adam', loss='mse')
    """)},
)

case(
    name="keras_sparse_labels_off_by_one_units",
    library="tensorflow",
    category="implementation error",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="which is outside the valid range of [0, 4)",
    diagnosis=(
        "Labels are quality - 4, i.e. 0..4 (5 classes), but n_classes = y.max() = 4, so the "
        "softmax layer has 4 units; sparse_categorical_crossentropy receives label 4 and "
        "raises InvalidArgumentError. Use y.max() + 1."
    ),
    files={"ratings.csv": ratings_csv},
    cells=[
        MD("# Wine rating classifier"),
        code("""
            import numpy as np
            import pandas as pd
            from tensorflow import keras
            from tensorflow.keras import layers
        """),
        code("""
            wine = pd.read_csv('ratings.csv')
            X = wine.drop(columns='quality').to_numpy(dtype='float32')
            y = (wine['quality'] - 4).to_numpy()
        """),
        code("""
            n_classes = int(y.max())
        """),
        code("""
            keras.utils.set_random_seed(0)
            model = keras.Sequential([
                keras.Input(shape=(X.shape[1],)),
                layers.Dense(16, activation='relu'),
                layers.Dense(n_classes, activation='softmax'),
            ])
            model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
        """),
        code("""
            history = model.fit(X, y, epochs=3, batch_size=32, verbose=0)
        """),
        code("""
            history.history['accuracy'][-1]
        """),
    ],
    target=4,
    fix={2: code("""
        n_classes = int(y.max()) + 1
    """)},
)

case(
    name="keras_fit_before_compile",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="ValueError",
    message_contains="You must call `compile()` before",
    diagnosis=(
        "The Sequential model is built but never compiled (no optimizer or loss), so "
        "model.fit raises ValueError. Call model.compile(...) before fitting."
    ),
    cells=[
        MD("# Binary classifier with early stopping"),
        code("""
            from sklearn.datasets import make_classification
            from tensorflow import keras
            from tensorflow.keras import layers
        """),
        code("""
            X, y = make_classification(n_samples=400, n_features=10, random_state=0)
            X = X.astype('float32')
        """),
        code("""
            keras.utils.set_random_seed(0)
            model = keras.Sequential([
                keras.Input(shape=(10,)),
                layers.Dense(32, activation='relu'),
                layers.Dropout(0.2),
                layers.Dense(1, activation='sigmoid'),
            ])
        """),
        code("""
            early_stop = keras.callbacks.EarlyStopping(patience=3, restore_best_weights=True)
        """),
        code("""
            history = model.fit(X, y, validation_split=0.2, epochs=3, callbacks=[early_stop], verbose=0)
        """),
        code("""
            max(history.history['val_accuracy'])
        """),
    ],
    target=4,
    fix={3: code("""
        model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])
        early_stop = keras.callbacks.EarlyStopping(patience=3, restore_best_weights=True)
    """)},
)

case(
    name="keras_categorical_loss_integer_labels",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Arguments `target` and `output` must have the same",
    diagnosis=(
        "y holds integer class ids of shape (n,), but the loss is categorical_crossentropy, "
        "which needs one-hot targets shaped like the (n, 3) softmax output; fit raises "
        "ValueError. Use sparse_categorical_crossentropy."
    ),
    cells=[
        MD("# Iris with Keras"),
        code("""
            from sklearn.datasets import load_iris
            from sklearn.model_selection import train_test_split
            from tensorflow import keras
            from tensorflow.keras import layers
        """),
        code("""
            iris = load_iris()
            X = iris.data.astype('float32')
            y = iris.target
        """),
        code("""
            X = (X - X.mean(axis=0)) / X.std(axis=0)
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
        """),
        code("""
            keras.utils.set_random_seed(0)
            model = keras.Sequential([
                keras.Input(shape=(4,)),
                layers.Dense(16, activation='relu'),
                layers.Dense(3, activation='softmax'),
            ])
            model.compile(optimizer='adam', loss='categorical_crossentropy', metrics=['accuracy'])
        """),
        code("""
            model.fit(X_train, y_train, epochs=3, batch_size=16, verbose=0)
        """),
        code("""
            model.evaluate(X_test, y_test, verbose=0)
        """),
    ],
    target=4,
    fix={3: code("""
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.Input(shape=(4,)),
            layers.Dense(16, activation='relu'),
            layers.Dense(3, activation='softmax'),
        ])
        model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    """)},
)

case(
    name="keras_embedding_vocab_without_padding",
    library="tensorflow",
    category="implementation error",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="is not in [0, 15)",
    diagnosis=(
        "Word ids start at 1 (0 is padding), so the largest id equals len(vocab) = 15, but "
        "the Embedding has input_dim=len(vocab); the lookup of id 15 raises "
        "InvalidArgumentError. Use len(vocab) + 1."
    ),
    cells=[
        MD("# Review sentiment with an embedding"),
        code("""
            import numpy as np
            from tensorflow import keras
            from tensorflow.keras import layers
        """),
        code("""
            rng = np.random.default_rng(1)
            good = ['great', 'excellent', 'love', 'fast', 'reliable']
            bad = ['poor', 'broken', 'slow', 'refund', 'awful']
            neutral = ['product', 'delivery', 'price', 'box', 'service']
            labels = rng.integers(0, 2, 200)
            texts = [' '.join(rng.choice((good if label else bad) + neutral, 6)) for label in labels]
        """),
        code("""
            vocab = {word: i + 1 for i, word in enumerate(sorted(set(' '.join(texts).split())))}
            seqs = [[vocab[word] for word in text.split()] for text in texts]
            X = keras.utils.pad_sequences(seqs, maxlen=8)
        """),
        code("""
            vocab_size = len(vocab)
        """),
        code("""
            keras.utils.set_random_seed(0)
            model = keras.Sequential([
                keras.Input(shape=(8,)),
                layers.Embedding(vocab_size, 8),
                layers.GlobalAveragePooling1D(),
                layers.Dense(1, activation='sigmoid'),
            ])
            model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])
        """),
        code("""
            history = model.fit(X, labels, epochs=3, batch_size=32, verbose=0)
        """),
        code("""
            history.history['accuracy'][-1]
        """),
    ],
    target=5,
    fix={3: code("""
        vocab_size = len(vocab) + 1
    """)},
)

# ----- matplotlib / seaborn / statsmodels -----------------------------------------------------

case(
    name="matplotlib_loss_curve_after_early_stop",
    library="other",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="x and y must have same first dimension",
    diagnosis=(
        "train() stops early, so losses has fewer entries than max_epochs=50; plotting it "
        "against np.arange(1, 51) raises ValueError. Use np.arange(1, len(losses) + 1)."
    ),
    cells=[
        MD("# Gradient descent with early stopping"),
        code("""
            import matplotlib.pyplot as plt
            import numpy as np
            from sklearn.datasets import make_regression
        """),
        code("""
            X, y = make_regression(n_samples=300, n_features=5, noise=10, random_state=0)
            X = (X - X.mean(axis=0)) / X.std(axis=0)
            y = (y - y.mean()) / y.std()
        """),
        code("""
            def train(X, y, lr=0.1, max_epochs=50, patience=3):
                w = np.zeros(X.shape[1])
                best, bad, losses = np.inf, 0, []
                for epoch in range(max_epochs):
                    w -= lr * X.T @ (X @ w - y) / len(y)
                    loss = float(np.mean((X @ w - y) ** 2))
                    losses.append(loss)
                    if loss < best - 1e-3:
                        best, bad = loss, 0
                    else:
                        bad += 1
                        if bad >= patience:
                            break
                return w, losses
        """),
        code("""
            w, losses = train(X, y)
            print(f'final loss {losses[-1]:.4f}')
        """),
        code("""
            epochs = np.arange(1, 51)
            plt.plot(epochs, losses, marker='o')
            plt.xlabel('epoch')
            plt.ylabel('MSE')
        """),
        code("""
            plt.title('Training loss')
            plt.show()
        """),
    ],
    target=4,
    fix={4: code("""
        epochs = np.arange(1, len(losses) + 1)
        plt.plot(epochs, losses, marker='o')
        plt.xlabel('epoch')
        plt.ylabel('MSE')
    """)},
)

case(
    name="seaborn_column_name_with_units",
    library="other",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Could not interpret value `petal_length` for `y`",
    diagnosis=(
        "load_iris(as_frame=True) names the column 'petal length (cm)', not 'petal_length'; "
        "seaborn cannot find y='petal_length' in data and raises ValueError. Rename the "
        "columns or use the real name."
    ),
    cells=[
        MD("# Iris petal lengths"),
        code("""
            import matplotlib.pyplot as plt
            import seaborn as sns
            from sklearn.datasets import load_iris
        """),
        code("""
            iris = load_iris(as_frame=True)
            df = iris.frame
            df['species'] = df['target'].map(dict(enumerate(iris.target_names)))
        """),
        code("""
            df.groupby('species').mean()
        """),
        code("""
            sns.boxplot(data=df, x='species', y='petal_length')
            plt.title('Petal length per species')
        """),
        code("""
            sns.scatterplot(data=df, x='sepal_length', y='petal_length', hue='species')
        """),
    ],
    target=3,
    fix={1: code("""
        iris = load_iris(as_frame=True)
        df = iris.frame.rename(columns=lambda c: c.replace(' (cm)', '').replace(' ', '_'))
        df['species'] = df['target'].map(dict(enumerate(iris.target_names)))
    """)},
)

case(
    name="statsmodels_pacf_lags_exceed_half_sample",
    library="other",
    category="API misuse",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Can only compute partial correlations for lags up to 50% of the sample size",
    diagnosis=(
        "The differenced monthly series has only 35 observations; plot_pacf with lags=24 "
        "needs nlags below half the sample size (17) and raises ValueError. Lower the lags."
    ),
    files={"monthly_sales.csv": monthly_sales_csv},
    cells=[
        MD("# Monthly sales autocorrelation"),
        code("""
            import matplotlib.pyplot as plt
            import pandas as pd
            from statsmodels.graphics.tsaplots import plot_acf, plot_pacf
        """),
        code("""
            sales = pd.read_csv('monthly_sales.csv', parse_dates=['month'], index_col='month')['sales']
            sales.tail()
        """),
        code("""
            diffed = sales.diff().dropna()
        """),
        code("""
            plot_acf(diffed, lags=24)
            plt.show()
        """),
        code("""
            plot_pacf(diffed, lags=24, method='ywm')
            plt.show()
        """),
    ],
    target=4,
    fix={4: code("""
        plot_pacf(diffed, lags=min(24, len(diffed) // 2 - 1), method='ywm')
        plt.show()
    """)},
)

case(
    name="matplotlib_subplot_grid_too_small",
    library="other",
    category="implementation error",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index 2 is out of bounds for axis 0 with size 2",
    diagnosis=(
        "The frame has 7 numeric columns but the figure is a fixed 2x3 grid; the 7th "
        "histogram indexes axes[2, 0] and raises IndexError. Size the grid from len(num_cols)."
    ),
    files={"housing_features.csv": housing_features_csv},
    cells=[
        MD("# Feature distributions"),
        code("""
            import matplotlib.pyplot as plt
            import numpy as np
            import pandas as pd
        """),
        code("""
            df = pd.read_csv('housing_features.csv')
        """),
        code("""
            num_cols = df.select_dtypes('number').columns
        """),
        code("""
            fig, axes = plt.subplots(2, 3, figsize=(12, 6))
            for i, col in enumerate(num_cols):
                axes[i // 3, i % 3].hist(df[col], bins=20)
                axes[i // 3, i % 3].set_title(col)
            fig.tight_layout()
        """),
        code("""
            df[num_cols].corr().round(2)
        """),
    ],
    target=3,
    fix={3: code("""
        n_rows = int(np.ceil(len(num_cols) / 3))
        fig, axes = plt.subplots(n_rows, 3, figsize=(12, 3 * n_rows))
        for i, col in enumerate(num_cols):
            axes[i // 3, i % 3].hist(df[col], bins=20)
            axes[i // 3, i % 3].set_title(col)
        fig.tight_layout()
    """)},
)

# ----- notebook-specific: execution order -----------------------------------------------------

case(
    name="nb_helper_cell_never_executed",
    library="NBspecific",
    category="NB specific",
    needs_runtime=False,
    exception="NameError",
    message_contains="name 'add_features' is not defined",
    diagnosis=(
        "The cell defining add_features (code cell 2) has no execution count: it was never "
        "run in this kernel, so calling add_features raises NameError. Run that cell first."
    ),
    files={"passengers.csv": passengers_csv},
    cells=[
        MD("# Passenger features"),
        code("""
            import numpy as np
            import pandas as pd
        """),
        code("""
            df = pd.read_csv('passengers.csv')
        """),
        code("""
            def add_features(frame):
                frame = frame.copy()
                frame['FamilySize'] = frame['SibSp'] + frame['Parch'] + 1
                frame['IsAlone'] = (frame['FamilySize'] == 1).astype(int)
                frame['Title'] = frame['Name'].str.extract(r',\\s*([^\\.]+)\\.', expand=False)
                return frame
        """),
        code("""
            df['Age'] = df['Age'].fillna(df['Age'].median())
            df['Embarked'] = df['Embarked'].fillna('S')
        """),
        code("""
            df = add_features(df)
            df[['FamilySize', 'IsAlone', 'Title']].head()
        """),
        code("""
            df.groupby('Title')['Survived'].mean()
        """),
    ],
    target=4,
    counts=[1, 2, None, 3, None, None],
    fixed_counts=[1, 2, 3, 4, None, None],
)

case(
    name="nb_feature_selection_ran_before_cell",
    library="NBspecific",
    category="NB specific",
    needs_runtime=True,
    exception="KeyError",
    message_contains="'tenure'",
    diagnosis=(
        "The feature-selection cell below the target (code cell 3) was already executed: it "
        "kept only columns whose correlation with churn exceeds 0.2, and tenure's is lower, "
        "so df['tenure'] no longer exists and the target raises KeyError."
    ),
    files={"telecom.csv": telecom_csv},
    cells=[
        MD("# Telecom churn"),
        code("""
            import numpy as np
            import pandas as pd
            from sklearn.linear_model import LogisticRegression
        """),
        code("""
            df = pd.read_csv('telecom.csv')
        """),
        code("""
            df['tenure_years'] = df['tenure'] / 12
            df['charge_ratio'] = df['total_charges'] / (df['tenure'] * df['monthly_charges'])
        """),
        MD("## Keep the features that correlate with churn"),
        code("""
            corr = df.corr(numeric_only=True)['churn'].abs()
            selected = corr[corr > 0.2].index.tolist()
            df = df[selected]
        """),
        code("""
            X = df.drop(columns=['churn'])
            clf = LogisticRegression(max_iter=1000).fit(X, df['churn'])
        """),
    ],
    target=2,
    counts=[1, 2, None, 3, None],
    fixed_counts=[1, 2, None, None, None],
)

case(
    name="nb_model_name_reused_by_later_cell",
    library="NBspecific",
    category="NB specific",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="'KMeans' object has no attribute 'predict_proba'",
    diagnosis=(
        "The segmentation cell below (code cell 4) ran before the target and rebound 'model' "
        "to a KMeans instance, so model.predict_proba raises AttributeError. Give the "
        "clustering model its own name."
    ),
    cells=[
        MD("# Classifier and customer segments"),
        code("""
            import numpy as np
            from sklearn.cluster import KMeans
            from sklearn.datasets import make_classification
            from sklearn.linear_model import LogisticRegression
            from sklearn.metrics import roc_auc_score
            from sklearn.model_selection import train_test_split
        """),
        code("""
            X, y = make_classification(n_samples=500, n_features=6, n_informative=4, random_state=0)
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
        """),
        code("""
            model = LogisticRegression(max_iter=1000).fit(X_train, y_train)
            model.score(X_test, y_test)
        """),
        code("""
            proba = model.predict_proba(X_test)[:, 1]
            roc_auc_score(y_test, proba)
        """),
        MD("## Segments"),
        code("""
            model = KMeans(n_clusters=3, n_init=10, random_state=0).fit(X)
            np.bincount(model.labels_)
        """),
    ],
    target=3,
    counts=[1, 2, 3, None, 4],
    fix={4: code("""
        segmenter = KMeans(n_clusters=3, n_init=10, random_state=0).fit(X)
        np.bincount(segmenter.labels_)
    """)},
)

case(
    name="nb_columns_dropped_by_earlier_run",
    library="NBspecific",
    category="NB specific",
    needs_runtime=False,
    exception="KeyError",
    message_contains="['Ticket', 'Cabin'] not found in axis",
    diagnosis=(
        "Ticket and Cabin were already dropped by code cell 2 (execution 3); the later "
        "cleanup cell drops them again and raises KeyError. Drop only the remaining columns."
    ),
    files={"passengers.csv": passengers_csv},
    cells=[
        MD("# Cleaning passengers"),
        code("""
            import pandas as pd
        """),
        code("""
            df = pd.read_csv('passengers.csv')
        """),
        code("""
            df = df.drop(columns=['Ticket', 'Cabin'])
        """),
        code("""
            df['Embarked'] = df['Embarked'].fillna(df['Embarked'].mode()[0])
            df['Age'] = df['Age'].fillna(df['Age'].median())
        """),
        code("""
            df = df.drop(columns=['PassengerId', 'Name', 'Ticket', 'Cabin'])
            df.head()
        """),
        code("""
            pd.get_dummies(df, columns=['Sex', 'Embarked'], drop_first=True).corr()['Survived']
        """),
    ],
    target=4,
    fix={4: code("""
        df = df.drop(columns=['PassengerId', 'Name'])
        df.head()
    """)},
)

case(
    name="nb_fit_ran_before_feature_engineering",
    library="NBspecific",
    category="NB specific",
    needs_runtime=False,
    exception="ValueError",
    message_contains="The feature names should match those that were passed during fit",
    diagnosis=(
        "The split-and-fit cell (code cell 3, execution 3) ran before the feature-engineering "
        "cell (code cell 2, execution 4), so the model was fitted on 6 columns while X now has "
        "8; model.predict(X) raises ValueError about unseen feature names."
    ),
    files={"housing.csv": housing_features_csv},
    cells=[
        MD("# Housing value regression"),
        code("""
            import pandas as pd
            from sklearn.linear_model import LinearRegression
            from sklearn.model_selection import train_test_split
        """),
        code("""
            df = pd.read_csv('housing.csv')
            X = df.drop(columns=['value', 'ocean_proximity'])
            y = df['value']
        """),
        code("""
            X['rooms_per_household'] = X['rooms'] / X['households']
            X['bedroom_ratio'] = X['bedrooms'] / X['rooms']
        """),
        code("""
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
            model = LinearRegression().fit(X_train, y_train)
        """),
        code("""
            df['predicted'] = model.predict(X)
            df[['value', 'predicted']].head()
        """),
    ],
    target=4,
    counts=[1, 2, 4, 3, None],
    fixed_counts=[1, 2, 3, 4, None],
)

case(
    name="nb_category_mapping_applied_twice",
    library="NBspecific",
    category="NB specific",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Input X contains NaN",
    diagnosis=(
        "Sex was already mapped to 0/1 in the exploration cell (code cell 2); the encoding cell "
        "maps it again with the 'male'/'female' dictionary, turning every value into NaN, so "
        "LogisticRegression.fit raises ValueError."
    ),
    files={"passengers.csv": passengers_csv},
    cells=[
        MD("# Survival model"),
        code("""
            import pandas as pd
            from sklearn.linear_model import LogisticRegression
        """),
        code("""
            df = pd.read_csv('passengers.csv')
            df['Age'] = df['Age'].fillna(df['Age'].median())
            df['Embarked'] = df['Embarked'].fillna('S')
        """),
        code("""
            df['Sex'] = df['Sex'].map({'male': 0, 'female': 1})
            df.groupby('Sex')['Survived'].mean()
        """),
        code("""
            sex_map = {'male': 0, 'female': 1}
            port_map = {'S': 0, 'C': 1, 'Q': 2}
            df['Sex'] = df['Sex'].map(sex_map)
            df['Embarked'] = df['Embarked'].map(port_map)
        """),
        code("""
            features = ['Pclass', 'Sex', 'Age', 'SibSp', 'Parch', 'Fare', 'Embarked']
            X = df[features]
            y = df['Survived']
        """),
        code("""
            clf = LogisticRegression(max_iter=1000).fit(X, y)
        """),
        code("""
            clf.score(X, y)
        """),
    ],
    target=5,
    fix={2: code("""
        df.groupby('Sex')['Survived'].mean()
    """)},
)


# ---------------------------------------------------------------------------------------------
# The bundled example: a realistic notebook whose next cell crashes on a dropped column.

EXAMPLE_CELLS = [
    MD("# Titanic-like survival model\n\nSynthetic passenger data, cleaning, features, model."),
    code("""
        import numpy as np
        import pandas as pd
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.model_selection import cross_val_score
    """),
    code("""
        rng = np.random.default_rng(42)
        n = 400
        df = pd.DataFrame({
            'Pclass': rng.choice([1, 2, 3], n, p=[0.25, 0.2, 0.55]),
            'Sex': rng.choice(['male', 'female'], n, p=[0.64, 0.36]),
            'Age': rng.integers(1, 75, n).astype(float),
            'SibSp': rng.choice([0, 0, 0, 1, 1, 2], n),
            'Parch': rng.choice([0, 0, 0, 0, 1, 2], n),
            'Fare': rng.gamma(2.0, 15.0, n).round(2),
            'Cabin': np.where(rng.random(n) < 0.25, 'C' + rng.integers(1, 120, n).astype(str), None),
            'Embarked': rng.choice(['S', 'C', 'Q'], n, p=[0.7, 0.2, 0.1]),
        })
        df.loc[rng.choice(n, 60, replace=False), 'Age'] = np.nan
        p_survive = 0.75 * (df['Sex'] == 'female') + 0.2 - 0.1 * (df['Pclass'] - 1)
        df['Survived'] = (rng.random(n) < p_survive).astype(int)
        df.head()
    """),
    MD("## Cleaning"),
    code("""
        df['Age'] = df['Age'].fillna(df['Age'].median())
        df = df.drop(columns=['Cabin'])
        df.isna().sum()
    """),
    MD("## Feature engineering"),
    code("""
        df['FamilySize'] = df['SibSp'] + df['Parch'] + 1
        df['HasCabin'] = df['Cabin'].notna().astype(int)
    """),
    code("""
        X = pd.get_dummies(df.drop(columns=['Survived']), columns=['Sex', 'Embarked'], drop_first=True)
        y = df['Survived']
    """),
    MD("## Model"),
    code("""
        forest = RandomForestClassifier(n_estimators=50, random_state=0)
        cross_val_score(forest, X, y, cv=3).mean()
    """),
]
EXAMPLE_TARGET = 3
EXAMPLE_EXPECTED = {"exception": "KeyError", "message_contains": "'Cabin'"}


# ---------------------------------------------------------------------------------------------
# Writing.


def cell_id(case_name: str, position: int) -> str:
    return hashlib.sha1(f"{case_name}:{position}".encode()).hexdigest()[:12]


def make_notebook(name: str, cells: list, counts: list) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    code_index = 0
    for position, cell in enumerate(cells):
        if isinstance(cell, MD):
            nb.cells.append(new_markdown_cell(cell.text, id=cell_id(name, position)))
        else:
            nb.cells.append(new_code_cell(cell, id=cell_id(name, position), execution_count=counts[code_index]))
            code_index += 1
    nbformat.validate(nb)
    return nb


def check_case(c: Case, counts: list, fixed_counts: list, n_code: int) -> None:
    problems = []
    if c.library not in LIBRARIES:
        problems.append(f"library {c.library!r}")
    if c.category not in CATEGORIES:
        problems.append(f"category {c.category!r}")
    if not 0 <= c.target < n_code:
        problems.append("target out of range")
    for label, seq in (("counts", counts), ("fixed_counts", fixed_counts)):
        if len(seq) != n_code:
            problems.append(f"{label} has {len(seq)} entries for {n_code} code cells")
            continue
        if seq[c.target] is not None:
            problems.append(f"{label}: target cell has an execution count")
        recorded = [n for n in seq if n is not None]
        if len(set(recorded)) != len(recorded):
            problems.append(f"{label}: repeated execution counts")
        if any(n is not None for n in seq[c.target + 1:]) and c.library != "NBspecific":
            problems.append(f"{label}: a cell after the target was executed")
    if any(i >= n_code for i in c.fix):
        problems.append("fix edits a missing cell")
    if not c.fix and fixed_counts == counts:
        problems.append("buggy and fixed are identical")
    if problems:
        raise SystemExit(f"{c.name}: " + "; ".join(problems))


def write_case(c: Case) -> dict:
    code_cells = [cell for cell in c.cells if not isinstance(cell, MD)]
    counts = c.counts or visual_counts(len(code_cells), c.target)
    fixed_counts = c.fixed_counts or counts
    check_case(c, counts, fixed_counts, len(code_cells))

    fixed_cells = []
    code_index = 0
    for cell in c.cells:
        if isinstance(cell, MD):
            fixed_cells.append(cell)
        else:
            fixed_cells.append(c.fix.get(code_index, cell))
            code_index += 1

    folder = HERE / c.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    nbformat.write(make_notebook(c.name, c.cells, counts), folder / "buggy.ipynb")
    nbformat.write(make_notebook(c.name, fixed_cells, fixed_counts), folder / "fixed.ipynb")
    for file_name, make in c.files.items():
        (folder / file_name).write_text(make(), encoding="utf-8")
    return {
        "case": c.name,
        "library": c.library,
        "target_cell": c.target,
        "exception": c.exception,
        "message_contains": c.message_contains,
        "diagnosis": c.diagnosis,
        "needs_runtime": c.needs_runtime,
        "category": c.category,
    }


def remove_stale_cases(names: set[str]) -> None:
    for folder in HERE.iterdir():
        if folder.is_dir() and (folder / "buggy.ipynb").exists() and folder.name not in names:
            shutil.rmtree(folder)


def write_example() -> None:
    n_code = sum(1 for cell in EXAMPLE_CELLS if not isinstance(cell, MD))
    counts = visual_counts(n_code, EXAMPLE_TARGET)
    EXAMPLE_PATH.parent.mkdir(exist_ok=True)
    nbformat.write(make_notebook("titanic_like", EXAMPLE_CELLS, counts), EXAMPLE_PATH)


README_BEGIN = "<!-- cases:begin -->"
README_END = "<!-- cases:end -->"


def update_readme(manifest: list[dict]) -> None:
    """Rewrite the case table between the markers of README.md."""
    readme = HERE / "README.md"
    text = readme.read_text(encoding="utf-8")
    if README_BEGIN not in text or README_END not in text:
        raise SystemExit(f"{readme} lacks the {README_BEGIN} / {README_END} markers")
    lines = [
        "| case | library | target cell | exception | category | needs runtime |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for entry in manifest:
        lines.append(
            f"| `{entry['case']}` | {entry['library']} | {entry['target_cell']} | {entry['exception']} "
            f"| {entry['category']} | {'yes' if entry['needs_runtime'] else 'no'} |"
        )
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    readme.write_text(f"{head}{README_BEGIN}\n" + "\n".join(lines) + f"\n{README_END}{tail}", encoding="utf-8")


def main() -> None:
    names = [c.name for c in CASES]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SystemExit(f"duplicate case names: {sorted(duplicates)}")
    remove_stale_cases(set(names))
    manifest = [write_case(c) for c in CASES]
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    write_example()
    update_readme(manifest)
    by_library: dict[str, int] = {}
    for entry in manifest:
        by_library[entry["library"]] = by_library.get(entry["library"], 0) + 1
    runtime = sum(entry["needs_runtime"] for entry in manifest)
    print(f"{len(manifest)} cases ({runtime} need runtime information): "
          + ", ".join(f"{lib} {n}" for lib, n in sorted(by_library.items())))


if __name__ == "__main__":
    main()
