# What a model writes for "plot monthly revenue from data/sales.csv and tell me the best month".
import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv("data/sales.csv", parse_dates=["date"])
monthly = df.groupby(df["date"].dt.to_period("M"))["amount"].sum()
fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
monthly.plot(kind="bar", ax=ax, color="steelblue", title="Monthly revenue 2024")
fig.tight_layout()
fig.savefig("revenue.png")
print(f"best month: {monthly.idxmax().strftime('%B %Y')} (revenue {monthly.max():,.2f})")
print(f"months: {len(monthly)}, total {monthly.sum():,.2f}")
