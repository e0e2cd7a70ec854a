#!/usr/bin/env python3
"""Writes the DBSEC-2010-length DGHs for adult as ARX-format CSVs (leaf;level1;...;top).

The paper gives only the DGH lengths (Age 6, Work Class 3, Education 3, Marital Status 3, Race 1,
Gender 1, Native Country 4, Salary Class 1); the groupings below are ours. Run from this folder.
"""

def write(name, rows):
    with open(f"{name}.csv", "w") as f:
        for r in rows:
            f.write(";".join(r) + "\n")

def iv(lo, width):
    a = (lo // width) * width
    return f"[{a},{a + width})"

# Age 17..90 (74 leaves, as in the paper's Table 1(a)): nested intervals of width 5, 10, 20, 40, 80, then *.
write("age", [[str(a), iv(a, 5), iv(a, 10), iv(a, 20), iv(a, 40), iv(a, 80), "*"] for a in range(17, 91)])

work = {
    "Private": ("Private", "Non-government"),
    "Self-emp-not-inc": ("Self-employed", "Non-government"),
    "Self-emp-inc": ("Self-employed", "Non-government"),
    "Without-pay": ("Unpaid", "Non-government"),
    "Federal-gov": ("Government", "Government"),
    "State-gov": ("Government", "Government"),
    "Local-gov": ("Government", "Government"),
}
write("workclass", [[v, a, b, "*"] for v, (a, b) in work.items()])

edu = {
    "Preschool": ("Elementary", "No-degree"), "1st-4th": ("Elementary", "No-degree"),
    "5th-6th": ("Elementary", "No-degree"), "7th-8th": ("Elementary", "No-degree"),
    "9th": ("High-school", "No-degree"), "10th": ("High-school", "No-degree"),
    "11th": ("High-school", "No-degree"), "12th": ("High-school", "No-degree"),
    "HS-grad": ("High-school", "No-degree"),
    "Some-college": ("College", "Higher-education"), "Assoc-acdm": ("College", "Higher-education"),
    "Assoc-voc": ("College", "Higher-education"), "Bachelors": ("University", "Higher-education"),
    "Masters": ("Graduate", "Higher-education"), "Doctorate": ("Graduate", "Higher-education"),
    "Prof-school": ("Graduate", "Higher-education"),
}
write("education", [[v, a, b, "*"] for v, (a, b) in edu.items()])

marital = {
    "Married-civ-spouse": ("Married", "Spouse-present"), "Married-AF-spouse": ("Married", "Spouse-present"),
    "Married-spouse-absent": ("Apart", "Spouse-not-present"), "Separated": ("Apart", "Spouse-not-present"),
    "Divorced": ("Was-married", "Spouse-not-present"), "Widowed": ("Was-married", "Spouse-not-present"),
    "Never-married": ("Never-married", "Spouse-not-present"),
}
write("marital-status", [[v, a, b, "*"] for v, (a, b) in marital.items()])

write("race", [[v, "*"] for v in ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]])
write("sex", [[v, "*"] for v in ["Male", "Female"]])
write("salary-class", [[v, "*"] for v in ["<=50K", ">50K"]])

# Native country: sub-region, region, the Americas vs the rest, *.
country = {
    "United-States": "Northern-America", "Canada": "Northern-America",
    "Outlying-US(Guam-USVI-etc)": "Northern-America",
    "Mexico": "Central-America", "Guatemala": "Central-America", "Honduras": "Central-America",
    "El-Salvador": "Central-America", "Nicaragua": "Central-America",
    "Cuba": "Caribbean", "Jamaica": "Caribbean", "Haiti": "Caribbean", "Dominican-Republic": "Caribbean",
    "Puerto-Rico": "Caribbean", "Trinadad&Tobago": "Caribbean",
    "Columbia": "South-America", "Ecuador": "South-America", "Peru": "South-America",
    "England": "Western-Europe", "Scotland": "Western-Europe", "Ireland": "Western-Europe",
    "France": "Western-Europe", "Germany": "Western-Europe", "Holand-Netherlands": "Western-Europe",
    "Italy": "Southern-Europe", "Portugal": "Southern-Europe", "Greece": "Southern-Europe",
    "Yugoslavia": "Southern-Europe",
    "Poland": "Eastern-Europe", "Hungary": "Eastern-Europe",
    "China": "East-Asia", "Japan": "East-Asia", "Taiwan": "East-Asia", "Hong": "East-Asia",
    "South": "East-Asia",  # "South" is South Korea in the UCI documentation
    "India": "South-Asia", "Iran": "South-Asia",
    "Philippines": "South-East-Asia", "Vietnam": "South-East-Asia", "Cambodia": "South-East-Asia",
    "Laos": "South-East-Asia", "Thailand": "South-East-Asia",
}
region = {
    "Northern-America": "North-America", "Central-America": "Latin-America", "Caribbean": "Latin-America",
    "South-America": "Latin-America", "Western-Europe": "Europe", "Southern-Europe": "Europe",
    "Eastern-Europe": "Europe", "East-Asia": "Asia", "South-Asia": "Asia", "South-East-Asia": "Asia",
}
half = {"North-America": "Americas", "Latin-America": "Americas", "Europe": "Eurasia", "Asia": "Eurasia"}
write("native-country", [[c, s, region[s], half[region[s]], "*"] for c, s in country.items()])
