"""The dashboard's page scripts (run by Streamlit through app/navigation.py), shipped as a package."""
